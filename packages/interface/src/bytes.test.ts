import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter, isParleyError, testSeed } from './index.js';

const seed = testSeed(20261129);

describe('ByteWriter / ByteReader', () => {
  it(`round-trips every primitive, including strings that start with a BOM (PARLEY_SEED=${seed})`, () => {
    fc.assert(
      fc.property(
        fc.nat(),
        fc.integer(),
        fc.boolean(),
        fc.uint8Array({ maxLength: 300 }),
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        (u, i, b, bytes, s) => {
          const w = new ByteWriter(1);
          w.uint(u);
          w.int(i);
          w.bool(b);
          w.bytes(bytes);
          w.string(`\uFEFF${s}`);
          w.string(s);
          const r = new ByteReader(w.finish());
          expect([r.uint(), r.int(), r.bool(), r.bytes(), r.string(), r.string()]).toEqual([
            u,
            i,
            b,
            bytes,
            `\uFEFF${s}`,
            s,
          ]);
          r.end();
        },
      ),
      { seed, numRuns: 1000, verbose: 0 },
    );
  });

  it(`turns random bytes into values or DecodeError, never anything else (PARLEY_SEED=${seed})`, () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const r = new ByteReader(bytes);
        try {
          for (let i = 0; i < 8; i++) {
            r.count(1);
            r.string();
            r.bytes();
            r.bool();
          }
        } catch (err) {
          if (!isParleyError(err, 'decode_error')) throw err;
        }
      }),
      { seed, numRuns: 1000 },
    );
  });

  it('refuses lengths and counts beyond the input, and non-canonical varints', () => {
    const w = new ByteWriter();
    w.uint(1_000_000);
    const huge = w.finish();
    expect(() => new ByteReader(huge).bytes()).toThrow(/exceeds the remaining input/);
    expect(() => new ByteReader(huge).count(1)).toThrow(/exceeds the remaining input/);
    expect(() => new ByteReader(new Uint8Array([0x80, 0x00])).uint()).toThrow(/non-canonical/);
    expect(() => new ByteReader(new Uint8Array(9).fill(0xff)).uint()).toThrow(/longer than 8 bytes/);
    expect(() => new ByteWriter().uint(-1)).toThrow(RangeError);
  });
});
