import { DecodeError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { decodeGossip, encodeGossip } from './wire.js';

describe('eventual gossip wire', () => {
  it('round-trips batches and refuses empty parts, which no delta encodes to', () => {
    const parts = [new Uint8Array([1, 2, 3]), new Uint8Array([9, 9])];
    expect(decodeGossip(encodeGossip(parts))).toEqual(parts);
    // 12,288 empty parts in 12 KiB: one object per input byte before this check.
    expect(() => decodeGossip(encodeGossip(Array.from({ length: 12_288 }, () => new Uint8Array(0))))).toThrow(
      DecodeError,
    );
    expect(() => decodeGossip(encodeGossip([parts[0] as Uint8Array, new Uint8Array(0)]))).toThrow(DecodeError);
  });
});
