/**
 * Version tokens: opaque, unique per write, and the same on every replica.
 *
 * A token is a 96-bit keyed hash of (cluster version key, log index, log term,
 * namespace, key, write kind), written as 16 base64url characters. The log
 * position makes it unique (one write per key per log entry) and replayable;
 * the hash makes consecutive tokens unrelated, so nobody can derive the next
 * token from the last one the way they could with a counter. It is not a MAC:
 * with the cluster's version key a peer can recompute tokens, which is fine
 * because every peer already holds the data.
 */
import { base64UrlEncode } from './json.js';

function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Four 32-bit lanes of a keyed string hash (not cryptographic). */
export function hash128(input: string): [number, number, number, number] {
  let a = 0x6a09e667;
  let b = 0xbb67ae85;
  let c = 0x3c6ef372;
  let d = 0xa54ff53a;
  for (let i = 0; i < input.length; i++) {
    const ch = input.charCodeAt(i);
    a = Math.imul(a ^ ch, 0x01000193);
    b = Math.imul((b + ch) | 0, 0x5bd1e995) ^ (a >>> 13);
    c = Math.imul(c ^ (ch << 7), 0x27d4eb2f) + b;
    d = Math.imul((d + (ch << 3)) | 0, 0x165667b1) ^ (c >>> 11);
    a = (a << 5) | (a >>> 27);
  }
  const len = input.length;
  a = mix32(a ^ len);
  b = mix32(b ^ a);
  c = mix32(c ^ b);
  d = mix32(d ^ c);
  a = mix32(a ^ d);
  b = mix32(b ^ a);
  return [a, b, c, d];
}

export type WriteKind = 'set' | 'claim' | 'lease';

/** The version token of a write at log position (index, term) to namespace/key. */
export function versionToken(
  versionKey: string,
  index: number,
  term: number,
  namespace: string,
  key: string,
  kind: WriteKind,
): string {
  // Lengths prefix the variable parts so distinct tuples never form the same string.
  const input = `${versionKey.length}:${versionKey}|${index}|${term}|${kind}|${namespace.length}:${namespace}|${key}`;
  const [a, b, c] = hash128(input);
  const bytes = new Uint8Array(12);
  for (let i = 0; i < 4; i++) {
    bytes[i] = (a >>> (24 - 8 * i)) & 0xff;
    bytes[4 + i] = (b >>> (24 - 8 * i)) & 0xff;
    bytes[8 + i] = (c >>> (24 - 8 * i)) & 0xff;
  }
  return base64UrlEncode(bytes);
}
