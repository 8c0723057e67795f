/**
 * The KVStorage compliance suite: every implementation (level, memory, the
 * simulator's) runs this same set of vitest cases.
 *
 * @example
 * ```ts
 * import { kvStorageCompliance } from '@parley/storage/testing';
 * kvStorageCompliance({
 *   name: 'memory',
 *   harness: () => {
 *     const disk = new MemoryKVDisk();
 *     return { open: () => openMemoryKV({ disk }), crash: async (s) => (s as MemoryKVStorage).crash() };
 *   },
 * });
 * ```
 */
import {
  isParleyError,
  type KVStorage,
  SeededRandom,
  type StorageKey,
  type StorageOp,
  testSeed,
  withSeed,
} from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../key-codec.js';
import { type StoreComplianceOptions, type StoreHarness, storeSessions } from './harness.js';

/** One KV storage location that can be opened, crashed and reopened. */
export type KVHarness = StoreHarness<KVStorage>;
export type KVComplianceOptions = StoreComplianceOptions<KVStorage>;

const enc = new TextEncoder();
const bytes = (s: string): Uint8Array => enc.encode(s);
const text = (b: Uint8Array | undefined): string | undefined =>
  b === undefined ? undefined : new TextDecoder().decode(b);

async function entries(s: KVStorage, prefix: StorageKey): Promise<[string[], string | undefined][]> {
  return (await s.loadRange(prefix)).map((c) => [c.key, text(c.data)]);
}

export function kvStorageCompliance(options: KVComplianceOptions): void {
  describe(`KVStorage compliance: ${options.name}`, () => {
    const setup = storeSessions(options);

    it('loads a missing key as undefined and an empty range as []', async () => {
      const { s } = await setup();
      expect(await s.load(['nope'])).toBeUndefined();
      expect(await s.loadRange(['nope'])).toEqual([]);
      expect(await s.loadRange([])).toEqual([]);
    });

    it('saves, overwrites and removes', async () => {
      const { s } = await setup();
      await s.save(['a', 'b'], bytes('one'));
      expect(text(await s.load(['a', 'b']))).toBe('one');
      await s.save(['a', 'b'], bytes('two'));
      expect(text(await s.load(['a', 'b']))).toBe('two');
      await s.remove(['a', 'b']);
      expect(await s.load(['a', 'b'])).toBeUndefined();
      await s.remove(['a', 'b']); // removing a missing key is not an error
      await s.save(['empty'], new Uint8Array(0));
      expect(await s.load(['empty'])).toEqual(new Uint8Array(0));
    });

    it('keeps its own copy of saved bytes', async () => {
      const { s } = await setup();
      const data = bytes('abc');
      await s.save(['k'], data);
      data[0] = 0x7a;
      expect(text(await s.load(['k']))).toBe('abc');
      const loaded = (await s.load(['k']))!;
      loaded[1] = 0x7a;
      expect(text(await s.load(['k']))).toBe('abc');
    });

    it('never confuses keys that differ only in how elements split', async () => {
      const { s } = await setup();
      const keys: StorageKey[] = [
        ['a', 'b'],
        ['a/b'],
        ['ab'],
        ['a\u0000b'],
        ['a', '\u0000b'],
        ['a\u0001', 'b'],
        ['a', ''],
        ['a', '', ''],
        [''],
        ['a'],
        ['é', '日本', '\u{1f600}'],
      ];
      for (const [i, k] of keys.entries()) await s.save(k, bytes(String(i)));
      for (const [i, k] of keys.entries()) expect(text(await s.load(k))).toBe(String(i));
      expect((await s.loadRange([])).length).toBe(keys.length);
      for (const k of keys) {
        const got = (await s.loadRange(k)).map((c) => c.key);
        expect(got).toContainEqual([...k]);
      }
    });

    it('loadRange matches element-wise prefixes, in key order', async () => {
      const { s } = await setup();
      for (const k of [['a', 'x'], ['ab'], ['a'], ['a', 'x', 'y'], ['b'], ['a', 'w'], ['a\u0000'], ['a', '']]) {
        await s.save(k, bytes(k.join('|')));
      }
      expect(await entries(s, ['a'])).toEqual([
        [['a'], 'a'],
        [['a', ''], 'a|'],
        [['a', 'w'], 'a|w'],
        [['a', 'x'], 'a|x'],
        [['a', 'x', 'y'], 'a|x|y'],
      ]);
      expect((await s.loadRange(['a', 'x'])).map((c) => c.key)).toEqual([
        ['a', 'x'],
        ['a', 'x', 'y'],
      ]);
      expect((await s.loadRange([])).map((c) => c.key)).toEqual([
        ['a'],
        ['a', ''],
        ['a', 'w'],
        ['a', 'x'],
        ['a', 'x', 'y'],
        ['a\u0000'],
        ['ab'],
        ['b'],
      ]);
    });

    it('removeRange removes exactly the element-wise prefix', async () => {
      const { s } = await setup();
      for (const k of [['p', '1'], ['p', '2', 'z'], ['p'], ['pq'], ['q', 'p']]) await s.save(k, bytes('v'));
      await s.removeRange(['p']);
      expect((await s.loadRange([])).map((c) => c.key)).toEqual([['pq'], ['q', 'p']]);
      await s.removeRange(['nothing', 'here']);
      await s.removeRange([]);
      expect(await s.loadRange([])).toEqual([]);
    });

    it('applies a batch in order: puts, deletes, and later ops on the same key winning', async () => {
      const { s } = await setup();
      await s.save(['old'], bytes('old'));
      await s.batch([
        { type: 'put', key: ['x'], data: bytes('1') },
        { type: 'put', key: ['y'], data: bytes('2') },
        { type: 'del', key: ['old'] },
        { type: 'put', key: ['x'], data: bytes('3') },
        { type: 'put', key: ['z'], data: bytes('4') },
        { type: 'del', key: ['z'] },
      ]);
      expect(await entries(s, [])).toEqual([
        [['x'], '3'],
        [['y'], '2'],
      ]);
      await s.batch([]);
      expect((await s.loadRange([])).length).toBe(2);
    });

    it('keeps everything across close and reopen', async () => {
      const ctx = await setup();
      await ctx.s.save(['k', '1'], bytes('a'));
      await ctx.s.batch([
        { type: 'put', key: ['k', '2'], data: bytes('b') },
        { type: 'put', key: ['k', '3'], data: bytes('c') },
      ]);
      await ctx.s.remove(['k', '3']);
      const s = await ctx.reopen();
      expect(await entries(s, ['k'])).toEqual([
        [['k', '1'], 'a'],
        [['k', '2'], 'b'],
      ]);
    });

    it('keeps every acknowledged write across a crash', async () => {
      const ctx = await setup();
      for (let i = 0; i < 20; i++) await ctx.s.save(['ack', String(i).padStart(2, '0')], bytes(`v${i}`));
      await ctx.s.batch([{ type: 'del', key: ['ack', '00'] }]);
      await ctx.crashAndReopen();
      const got = await ctx.s.loadRange(['ack']);
      expect(got.length).toBe(19);
      expect(text(await ctx.s.load(['ack', '19']))).toBe('v19');
    });

    it('a crash during a batch leaves it entirely applied or entirely absent', async () => {
      const ctx = await setup();
      for (const size of [2, 50, 500]) {
        await ctx.s.save(['before', String(size)], bytes('here'));
        const ops: StorageOp[] = [];
        for (let i = 0; i < size; i++)
          ops.push({ type: 'put', key: ['batch', String(size), String(i)], data: bytes(`${i}`) });
        ops.push({ type: 'del', key: ['before', String(size)] });
        const pending = ctx.s.batch(ops);
        pending.catch(() => undefined);
        await ctx.crashAndReopen();
        const applied = (await ctx.s.loadRange(['batch', String(size)])).length;
        const before = await ctx.s.load(['before', String(size)]);
        if (applied === 0) expect(text(before)).toBe('here');
        else {
          expect(applied).toBe(size);
          expect(before).toBeUndefined();
        }
      }
    });

    it('rejects every operation after close with a closed error', async () => {
      const { s } = await setup();
      await s.close();
      const attempts: (() => Promise<unknown>)[] = [
        () => s.load(['k']),
        () => s.save(['k'], bytes('v')),
        () => s.remove(['k']),
        () => s.loadRange([]),
        () => s.removeRange(['k']),
        () => s.batch([{ type: 'put', key: ['k'], data: bytes('v') }]),
      ];
      for (const attempt of attempts) {
        const err = await attempt().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isParleyError(err, 'closed'), `expected a closed error, got ${String(err)}`).toBe(true);
      }
      await s.close(); // closing twice is harmless
    });

    it('matches a reference model over random operations, closes and crashes', async () => {
      await withSeed(options.seed ?? testSeed(6_2026), async (seed) => {
        const rng = new SeededRandom(seed);
        const ctx = await setup();
        const model = new Map<string, { key: string[]; value: string }>();
        const alphabet = ['a', 'b', '', '\u0000', '\u0001', '/', 'é', 'ab', '\u{1f600}'];
        const randomKey = (maxLen: number): string[] => {
          const n = 1 + rng.int(maxLen);
          return Array.from({ length: n }, () => alphabet[rng.int(alphabet.length)]!);
        };
        const id = (k: readonly string[]) => JSON.stringify(k);
        const isPrefix = (p: readonly string[], k: readonly string[]) =>
          p.length <= k.length && p.every((x, i) => x === k[i]);
        const steps = options.randomSteps ?? 300;
        for (let step = 0; step < steps; step++) {
          const roll = rng.int(100);
          const where = `step ${step}`;
          if (roll < 35) {
            const key = randomKey(3);
            const value = `v${step}`;
            await ctx.s.save(key, bytes(value));
            model.set(id(key), { key, value });
          } else if (roll < 45) {
            const key = randomKey(3);
            await ctx.s.remove(key);
            model.delete(id(key));
          } else if (roll < 60) {
            const ops: StorageOp[] = [];
            for (let i = 1 + rng.int(8); i > 0; i--) {
              const key = randomKey(3);
              if (rng.int(4) === 0) {
                ops.push({ type: 'del', key });
                model.delete(id(key));
              } else {
                const value = `b${step}.${i}`;
                ops.push({ type: 'put', key, data: bytes(value) });
                model.set(id(key), { key, value });
              }
            }
            await ctx.s.batch(ops);
          } else if (roll < 63) {
            const prefix = randomKey(2);
            await ctx.s.removeRange(prefix);
            for (const [k, v] of model) if (isPrefix(prefix, v.key)) model.delete(k);
          } else if (roll < 66) {
            await ctx.reopen();
          } else if (roll < 68) {
            await ctx.crashAndReopen();
          } else if (roll < 85) {
            const prefix = rng.int(5) === 0 ? [] : randomKey(2);
            const want = [...model.values()]
              .filter((v) => isPrefix(prefix, v.key))
              .sort((x, y) => compareKeys(x.key, y.key))
              .map((v): [string[], string] => [v.key, v.value]);
            expect(await entries(ctx.s, prefix), `${where}: loadRange(${id(prefix)})`).toEqual(want);
          } else {
            const key = randomKey(3);
            expect(text(await ctx.s.load(key)), `${where}: load(${id(key)})`).toBe(model.get(id(key))?.value);
          }
        }
        const all = [...model.values()].sort((x, y) => compareKeys(x.key, y.key)).map((v) => [v.key, v.value]);
        expect(await entries(ctx.s, [])).toEqual(all);
      });
    });
  });
}
