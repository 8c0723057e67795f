import { SeededRandom, testSeed, withSeed } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { ARENA_CHUNK_BYTES, ByteArena, EntryColumns } from './arena.js';
import { decodeKey, encodeKey, KeyRunDecoder } from './key-codec.js';

const seed = testSeed(23);

describe('ByteArena', () => {
  it('returns independent copies, small and large', () => {
    const arena = new ByteArena();
    const src = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    const a = arena.copy(src, 10, 20);
    const b = arena.copy(src, 0, 300);
    const big = new Uint8Array(ARENA_CHUNK_BYTES).fill(5);
    const c = arena.copy(big);
    src.fill(0);
    big.fill(0);
    expect([...a]).toEqual(Array.from({ length: 10 }, (_, i) => 10 + i));
    expect(b[299]).toBe(299 & 0xff);
    expect(c.length).toBe(ARENA_CHUNK_BYTES);
    expect(c[0]).toBe(5);
  });
});

describe('EntryColumns', () => {
  it('matches an array of entries through pushes, truncations and dropped prefixes', async () => {
    await withSeed(seed, async (s) => {
      const rng = new SeededRandom(s);
      const cols = new EntryColumns(4096);
      let model: { term: number; type: 'normal' | 'conf'; data: number[] }[] = [];
      let base = 0;
      for (let step = 0; step < 3000; step++) {
        const roll = rng.int(100);
        if (roll < 70) {
          const size = rng.int(10) === 0 ? 2000 + rng.int(2000) : rng.int(200);
          const data = Array.from({ length: size }, () => rng.int(256));
          const type = rng.int(5) === 0 ? 'conf' : 'normal';
          const term = step;
          cols.push(term, type, Uint8Array.from(data));
          model.push({ term, type, data });
        } else if (roll < 80) {
          const n = rng.int(model.length + 1);
          cols.truncate(n);
          model = model.slice(0, n);
        } else if (roll < 90) {
          const n = rng.int(model.length + 1);
          cols.dropFront(n);
          model = model.slice(n);
          base += n;
        } else {
          expect(cols.length).toBe(model.length);
          for (let k = 0; k < model.length; k++) {
            const e = cols.entry(k, base + k + 1);
            const m = model[k]!;
            expect([e.term, e.type, e.index, cols.term(k), cols.dataBytes(k)]).toEqual([
              m.term,
              m.type,
              base + k + 1,
              m.term,
              m.data.length,
            ]);
            expect([...e.data]).toEqual(m.data);
          }
        }
      }
    });
  });
});

describe('KeyRunDecoder', () => {
  it('decodes runs of sorted keys exactly as decodeKey does, sharing leading strings', async () => {
    await withSeed(seed, async (s) => {
      const rng = new SeededRandom(s);
      const alphabet = ['a', 'b', '', '\u0000', '\u0001', 'é', 'ab'];
      const keys = Array.from({ length: 2000 }, () =>
        Array.from({ length: 1 + rng.int(4) }, () =>
          Array.from({ length: rng.int(3) }, () => alphabet[rng.int(alphabet.length)]).join(''),
        ),
      );
      const encoded = keys.map((k) => encodeKey(k)).sort(Buffer.compare);
      const run = new KeyRunDecoder();
      for (const e of encoded) {
        const got = run.decode(e);
        expect(got).toEqual(decodeKey(e));
        got.push('mutated'); // the caller owns the array
      }
    });
  });
});
