import type { Delta, Digest } from './types.js';

export function encodeDelta(_delta: Delta): Uint8Array {
  throw new Error('not implemented yet');
}
export function decodeDelta(_bytes: Uint8Array): Delta {
  throw new Error('not implemented yet');
}
export function encodeState(_state: Delta): Uint8Array {
  throw new Error('not implemented yet');
}
export function decodeState(_bytes: Uint8Array): Delta {
  throw new Error('not implemented yet');
}
export function encodeDigest(_digest: Digest): Uint8Array {
  throw new Error('not implemented yet');
}
export function decodeDigest(_bytes: Uint8Array): Digest {
  throw new Error('not implemented yet');
}
