/**
 * Wire messages of eventual namespaces (gossip payloads and direct requests).
 *
 * Tag table
 * ---------
 *   byte 0   WIRE_VERSION (1)
 *   byte 1   tag:
 *              0x10 GOSSIP   varint n, then n length-prefixed encoded deltas (one batch of local writes)
 *              0x01 PULL     the rest is an encoded digest; the reply is the encoded delta it lacks
 *              0x02 PUSH     the rest is an encoded delta; the reply (empty) says it is durable there
 *              0x03 RICH     the rest is a rich-value sync message (yjs / automerge, see rich/)
 *
 * Decoding throws only DecodeError and allocates in proportion to the input.
 */
import { ByteReader, ByteWriter, DecodeError } from '@parley/interface';

export const WIRE_VERSION = 1;
export const TAG_GOSSIP = 0x10;
export const TAG_PULL = 0x01;
export const TAG_PUSH = 0x02;
export const TAG_RICH = 0x03;

export function encodeGossip(deltas: readonly Uint8Array[]): Uint8Array {
  let size = 12;
  for (const d of deltas) size += d.length + 5;
  const out = new ByteWriter(size);
  out.u8(WIRE_VERSION);
  out.u8(TAG_GOSSIP);
  out.uint(deltas.length);
  for (const d of deltas) out.bytes(d);
  return out.finish();
}

export function decodeGossip(bytes: Uint8Array): Uint8Array[] {
  try {
    const r = new ByteReader(bytes);
    if (r.u8() !== WIRE_VERSION) throw new DecodeError('unknown wire version', 0);
    if (r.u8() !== TAG_GOSSIP) throw new DecodeError('not a gossip message', 1);
    // No encoded delta is empty: refusing empty parts keeps the parts (one object each) to one per two bytes.
    const n = r.count(2);
    const out: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      const part = r.bytes();
      if (part.length === 0) throw new DecodeError('empty delta in gossip', r.pos);
      out.push(part);
    }
    r.end();
    return out;
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`undecodable gossip: ${String(err)}`);
  }
}

/** A request: tag byte pair, then the body. */
export function encodeRequest(tag: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(body.length + 2);
  out[0] = WIRE_VERSION;
  out[1] = tag;
  out.set(body, 2);
  return out;
}

export function decodeRequest(bytes: Uint8Array): { tag: number; body: Uint8Array } {
  if (!(bytes instanceof Uint8Array) || bytes.length < 2) throw new DecodeError('request too short', 0);
  if (bytes[0] !== WIRE_VERSION) throw new DecodeError('unknown wire version', 0);
  const tag = bytes[1] as number;
  if (tag !== TAG_PULL && tag !== TAG_PUSH && tag !== TAG_RICH && tag !== TAG_GOSSIP) {
    throw new DecodeError(`unknown request tag ${tag}`, 1);
  }
  return { tag, body: bytes.subarray(2) };
}
