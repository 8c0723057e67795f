import { DecodeError, InvalidArgumentError, SeededRandom, testSeed, withSeed } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { crc32c } from './crc32c.js';
import { compareKeys, decodeKey, encodeKey, KeyRunDecoder, MAX_KEY_BYTES, prefixUpperBound } from './key-codec.js';

const seed = testSeed(17);

describe('crc32c', () => {
  it('matches the published CRC-32C check values', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('chains: the CRC of a then b equals the CRC of their concatenation, at any split', async () => {
    await withSeed(seed, async (s) => {
      const rng = new SeededRandom(s);
      for (let round = 0; round < 200; round++) {
        const all = Uint8Array.from({ length: rng.int(100) }, () => rng.int(256));
        const cut = rng.int(all.length + 1);
        expect(crc32c(all, crc32c(all.subarray(0, cut)), cut)).toBe(crc32c(all));
        expect(crc32c(all.subarray(cut), crc32c(all.subarray(0, cut)))).toBe(crc32c(all));
      }
    });
  });

  it('changes on any single flipped bit', () => {
    const data = new TextEncoder().encode('the raft log entry at index 42');
    const base = crc32c(data);
    for (let i = 0; i < data.length * 8; i++) {
      const copy = data.slice();
      copy[i >> 3]! ^= 1 << (i & 7);
      expect(crc32c(copy)).not.toBe(base);
    }
  });
});

describe('key codec', () => {
  const alphabet = ['a', 'b', '', '\u0000', '\u0001', '\u0002', '/', 'é', '\u{1f600}', '\uffff', 'ab'];
  const randomKey = (rng: SeededRandom): string[] =>
    Array.from({ length: 1 + rng.int(4) }, () =>
      Array.from({ length: rng.int(3) }, () => alphabet[rng.int(alphabet.length)]).join(''),
    );

  it('round-trips and orders encodings exactly as compareKeys orders keys', async () => {
    await withSeed(seed, async (s) => {
      const rng = new SeededRandom(s);
      for (let round = 0; round < 2000; round++) {
        const a = randomKey(rng);
        const b = randomKey(rng);
        const ea = encodeKey(a);
        const eb = encodeKey(b);
        expect(decodeKey(ea)).toEqual(a);
        expect(Math.sign(Buffer.compare(ea, eb)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(
          Math.sign(compareKeys(a, b)),
        );
        // Element-wise prefix ⇔ byte prefix within [encoded prefix, its upper bound).
        const p = a.slice(0, 1 + rng.int(a.length));
        const ep = encodeKey(p);
        const isPrefix = p.length <= b.length && p.every((x, i) => x === b[i]);
        const inRange = Buffer.compare(eb, ep) >= 0 && Buffer.compare(eb, prefixUpperBound(ep)) < 0;
        expect(inRange, `${JSON.stringify(p)} prefix of ${JSON.stringify(b)}`).toBe(isPrefix);
      }
    });
  });

  it('orders by code point, not UTF-16 unit', () => {
    expect(compareKeys(['\uffff'], ['\u{10000}'])).toBeLessThan(0);
    expect(Buffer.compare(encodeKey(['\uffff']), encodeKey(['\u{10000}']))).toBeLessThan(0);
  });

  it('rejects keys it cannot encode faithfully, and bytes no key encodes to', () => {
    expect(() => encodeKey([])).toThrow(InvalidArgumentError);
    expect(() => encodeKey(['ok', 3 as unknown as string])).toThrow(InvalidArgumentError);
    expect(() => encodeKey(['\ud800'])).toThrow(InvalidArgumentError);
    expect(() => encodeKey(['x\udc00y'])).toThrow(InvalidArgumentError);
    expect(() => encodeKey(['x'.repeat(70_000)])).toThrow(InvalidArgumentError);
    expect(encodeKey([], true).length).toBe(0);
    expect(() => decodeKey(Buffer.from([0x61]))).toThrow(DecodeError);
    expect(() => decodeKey(Buffer.from([0x01, 0x05, 0x00]))).toThrow(DecodeError);
    expect(() => decodeKey(Buffer.from([0x61, 0x01]))).toThrow(DecodeError);
  });

  it('rejects the empty key, over-long keys and bytes that are not UTF-8, alone and in a run', () => {
    const bad = [
      Buffer.alloc(0),
      Buffer.concat([Buffer.alloc(MAX_KEY_BYTES, 0x61), Buffer.from([0])]),
      Buffer.from([0x61, 0xff, 0x00]), // not UTF-8 (was read as 'a\ufffd', which encodes to other bytes)
      Buffer.from([0xed, 0xa0, 0x80, 0x00]), // an encoded lone surrogate
      Buffer.from([0xc0, 0xaf, 0x00]), // an overlong '/'
      Buffer.from([0x61, 0x00, 0xe2, 0x82, 0x00]), // a truncated sequence in the second element
    ];
    for (const b of bad) {
      expect(() => decodeKey(b)).toThrow(DecodeError);
      const run = new KeyRunDecoder();
      run.decode(encodeKey(['a', 'b']));
      expect(() => run.decode(b)).toThrow(DecodeError);
    }
    const longest = Buffer.concat([Buffer.alloc(MAX_KEY_BYTES - 1, 0x61), Buffer.from([0])]);
    expect(decodeKey(longest)).toEqual(['a'.repeat(MAX_KEY_BYTES - 1)]);
    expect(decodeKey(encodeKey(['\u{10FFFF}', '\u0000\u0001']))).toEqual(['\u{10FFFF}', '\u0000\u0001']);
  });
});
