/**
 * The lean channel's handshake: an ephemeral X25519 exchange, keys derived
 * with HKDF-SHA256 from the shared secret salted with the cluster's PSK, and
 * each side proving its libp2p identity by signing the transcript (both
 * ephemeral keys and its role) inside the first encrypted record.
 *
 *   dialer → listener   "PLN1" ‖ dialer ephemeral public key (32 B)
 *   listener → dialer   "PLN1" ‖ listener ephemeral public key (32 B)
 *   both, record 0      u16 length ‖ identity public key (libp2p protobuf) ‖ signature
 *
 * A peer without the PSK derives other keys, so its first record fails the
 * tag; a peer with the PSK but someone else's peer id cannot sign for it; a
 * replayed proof names other ephemeral keys. The identity record is bounded
 * (`MAX_AUTH_BYTES`) and the whole exchange by a timeout.
 */
import { createHash, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject } from 'node:crypto';
import type { Socket } from 'node:net';
import { publicKeyFromProtobuf, publicKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPublicKey } from '@libp2p/peer-id';
import { DecodeError, type PeerId, TimeoutError, UnavailableError } from '@parley/interface';
import { describeError } from '../logger.js';
import { RECORD_KEY_BYTES, RecordOpener, RecordSealer } from './seal.js';

const MAGIC = Buffer.from('PLN1');
const EPHEMERAL_BYTES = 32;
const HELLO_BYTES = MAGIC.length + EPHEMERAL_BYTES;
/** The identity record's bound: a public key and a signature (RSA-4096 included). */
export const MAX_AUTH_BYTES = 4096;
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const SALT_LABEL = Buffer.from('parley lean psk v1');
const INFO_LABEL = Buffer.from('parley lean keys v1');
const AUTH_LABEL = Buffer.from('parley lean auth v1');

export type Role = 'dialer' | 'listener';

export interface HandshakeOptions {
  readonly role: Role;
  readonly privateKey: PrivateKey;
  readonly psk: Uint8Array | undefined;
  /** The dialer's expectation: the listener must prove this peer id. */
  readonly expectPeer?: PeerId;
  /** Whether a proven peer id may talk to this node (the allow-list). */
  readonly admit: (peer: PeerId) => boolean;
  readonly timeoutMs: number;
}

export interface Handshaken {
  readonly peer: PeerId;
  readonly sealer: RecordSealer;
  /** Holds the bytes that followed the peer's proof, still unread. */
  readonly opener: RecordOpener;
}

/** Runs the handshake on a connected socket; rejects (and leaves the socket to the caller) on any failure. */
export function handshake(socket: Socket, o: HandshakeOptions): Promise<Handshaken> {
  return new Promise<Handshaken>((resolve, reject) => {
    const own = generateKeyPairSync('x25519');
    const ownPublic = rawX25519(own.publicKey);
    let hello: Buffer = Buffer.alloc(0);
    let opener: RecordOpener | undefined;
    let sealer: RecordSealer | undefined;
    let transcript: Buffer | undefined;
    let settled = false;
    const finish = (err: Error | undefined, value?: Handshaken) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onError);
      if (err) reject(err);
      else resolve(value as Handshaken);
    };
    const timer = setTimeout(() => finish(new TimeoutError('lean handshake timed out')), o.timeoutMs);
    const onClose = () => finish(new UnavailableError('lean connection closed during the handshake'));
    const onError = (err: Error) => finish(new UnavailableError(`lean connection failed: ${describeError(err)}`));
    const onData = (chunk: Buffer) => {
      try {
        if (!opener) {
          hello = Buffer.concat([hello, chunk]);
          if (hello.length < HELLO_BYTES) return;
          if (!hello.subarray(0, MAGIC.length).equals(MAGIC)) throw new DecodeError('not a lean channel');
          const theirs = hello.subarray(MAGIC.length, HELLO_BYTES);
          transcript = o.role === 'dialer' ? Buffer.concat([ownPublic, theirs]) : Buffer.concat([theirs, ownPublic]);
          const keys = deriveKeys(own.privateKey, theirs, o.psk, transcript);
          sealer = new RecordSealer(o.role === 'dialer' ? keys.dialer : keys.listener);
          opener = new RecordOpener(o.role === 'dialer' ? keys.listener : keys.dialer, MAX_AUTH_BYTES);
          opener.push(hello.subarray(HELLO_BYTES));
          sendProof(socket, sealer, o, transcript).catch((err: unknown) =>
            finish(new UnavailableError(`lean handshake: ${describeError(err)}`)),
          );
        } else {
          opener.push(chunk);
        }
        const proof = opener.next();
        if (!proof) return;
        socket.pause(); // nothing more is read until the proof is checked and the link takes over
        checkProof(proof, o, transcript as Buffer).then(
          (peer) => finish(undefined, { peer, sealer: sealer as RecordSealer, opener: opener as RecordOpener }),
          (err: Error) => finish(err),
        );
      } catch (err) {
        finish(err instanceof Error ? err : new DecodeError(String(err)));
      }
    };
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.on('error', onError);
    socket.write(Buffer.concat([MAGIC, ownPublic]));
  });
}

function deriveKeys(
  own: KeyObject,
  theirs: Buffer,
  psk: Uint8Array | undefined,
  transcript: Buffer,
): { dialer: Buffer; listener: Buffer } {
  const publicKey = createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, theirs]), format: 'der', type: 'spki' });
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey: own, publicKey });
  } catch {
    throw new DecodeError('lean handshake: unusable ephemeral key');
  }
  const salt = createHash('sha256')
    .update(SALT_LABEL)
    .update(psk ?? new Uint8Array())
    .digest();
  const okm = Buffer.from(
    hkdfSync('sha256', shared, salt, Buffer.concat([INFO_LABEL, transcript]), 2 * RECORD_KEY_BYTES),
  );
  return { dialer: okm.subarray(0, RECORD_KEY_BYTES), listener: okm.subarray(RECORD_KEY_BYTES) };
}

function signed(role: Role, transcript: Buffer): Buffer {
  return Buffer.concat([AUTH_LABEL, Buffer.from([role === 'dialer' ? 1 : 2]), transcript]);
}

async function sendProof(socket: Socket, sealer: RecordSealer, o: HandshakeOptions, transcript: Buffer): Promise<void> {
  const identity = publicKeyToProtobuf(o.privateKey.publicKey);
  const signature = await o.privateKey.sign(signed(o.role, transcript));
  const proof = Buffer.alloc(2 + identity.length + signature.length);
  proof.writeUInt16BE(identity.length, 0);
  proof.set(identity, 2);
  proof.set(signature, 2 + identity.length);
  if (!socket.destroyed) socket.write(sealer.seal(proof));
}

async function checkProof(proof: Buffer, o: HandshakeOptions, transcript: Buffer): Promise<PeerId> {
  if (proof.length < 2) throw new DecodeError('lean identity proof is truncated');
  const keyBytes = proof.readUInt16BE(0);
  if (2 + keyBytes > proof.length) throw new DecodeError('lean identity proof is truncated');
  let peer: PeerId;
  let verified: boolean;
  try {
    const key = publicKeyFromProtobuf(proof.subarray(2, 2 + keyBytes));
    peer = peerIdFromPublicKey(key).toString();
    const theirRole: Role = o.role === 'dialer' ? 'listener' : 'dialer';
    verified = await key.verify(signed(theirRole, transcript), proof.subarray(2 + keyBytes));
  } catch (err) {
    throw new DecodeError(`lean identity proof is malformed: ${describeError(err)}`);
  }
  if (!verified) throw new DecodeError('lean identity proof has a bad signature');
  if (o.expectPeer !== undefined && peer !== o.expectPeer) {
    throw new UnavailableError(`lean channel answered as ${peer}, not ${o.expectPeer}`, { peer: o.expectPeer });
  }
  if (!o.admit(peer)) throw new UnavailableError(`peer ${peer} is not allowed`, { peer });
  return peer;
}

function rawX25519(key: KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' }).subarray(X25519_SPKI_PREFIX.length);
}
