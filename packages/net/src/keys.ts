/**
 * Cluster secrets: the libp2p private-network pre-shared key (PSK) and a
 * node's identity key. Both are plain files, written with mode 0600.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { generateKey } from '@libp2p/pnet';
import { InvalidArgumentError, type PeerId } from '@parley/interface';

/** Length of a PSK in the libp2p swarm-key file format (header lines + 64 hex digits). */
export const PSK_BYTES = 95;
const PSK_HEADER = '/key/swarm/psk/1.0.0/\n/base16/\n';

/**
 * A fresh 256-bit pre-shared key in the libp2p swarm-key file format
 * (`/key/swarm/psk/1.0.0/`, `/base16/`, 64 hex digits). Every node of a
 * cluster needs the same bytes.
 */
export function generatePsk(): Uint8Array {
  const psk = new Uint8Array(PSK_BYTES);
  generateKey(psk);
  return psk;
}

/** Checks that `psk` is a swarm key libp2p's private network accepts; throws `invalid_argument` otherwise. */
export function validatePsk(psk: Uint8Array): void {
  const text = new TextDecoder().decode(psk).trim();
  const lines = text.split('\n');
  if (`${lines[0]}\n${lines[1]}\n` !== PSK_HEADER || !/^[0-9a-fA-F]{64}$/.test(lines[2] ?? '') || lines.length !== 3) {
    throw new InvalidArgumentError(
      'the pre-shared key is not a libp2p swarm key (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits)',
    );
  }
}

export async function savePsk(path: string, psk: Uint8Array): Promise<void> {
  validatePsk(psk);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, psk, { mode: 0o600 });
}

export async function loadPsk(path: string): Promise<Uint8Array> {
  const psk = new Uint8Array(await readFile(path));
  validatePsk(psk);
  return psk;
}

/** Reads the PSK at `path`, or creates one there if the file does not exist. */
export async function loadOrCreatePsk(path: string): Promise<Uint8Array> {
  try {
    return await loadPsk(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const psk = generatePsk();
  await savePsk(path, psk);
  return psk;
}

/** A fresh Ed25519 identity. */
export async function generatePrivateKey(): Promise<PrivateKey> {
  return generateKeyPair('Ed25519');
}

export async function savePrivateKey(path: string, key: PrivateKey): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, privateKeyToProtobuf(key), { mode: 0o600 });
}

export async function loadPrivateKey(path: string): Promise<PrivateKey> {
  const bytes = new Uint8Array(await readFile(path));
  try {
    return privateKeyFromProtobuf(bytes);
  } catch (err) {
    throw new InvalidArgumentError(`'${path}' does not hold a libp2p private key: ${(err as Error).message}`);
  }
}

/** Reads the identity at `path`, or creates one there, so a node keeps its peer id across restarts. */
export async function loadOrCreatePrivateKey(path: string): Promise<PrivateKey> {
  try {
    return await loadPrivateKey(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = await generatePrivateKey();
  await savePrivateKey(path, key);
  return key;
}

/** The peer id (as a string) that a private key gives a node. */
export function peerIdOf(key: PrivateKey): PeerId {
  return peerIdFromPrivateKey(key).toString();
}
