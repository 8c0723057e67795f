/**
 * The RaftLogStorage compliance suite: every implementation (level, memory,
 * the simulator's, @parley/raft's MemoryRaftStorage) runs this same set of
 * vitest cases.
 *
 * @example
 * ```ts
 * import { raftLogStorageCompliance } from '@parley/storage/testing';
 * raftLogStorageCompliance({
 *   name: 'memory',
 *   harness: () => {
 *     const disk = new MemoryRaftLogDisk();
 *     return { open: () => openMemoryRaftLog({ disk }), crash: async (s) => (s as MemoryRaftLogStorage).crash() };
 *   },
 * });
 * ```
 */
import {
  type HardState,
  isParleyError,
  type RaftEntry,
  type RaftLogStorage,
  type RaftSnapshot,
  SeededRandom,
  testSeed,
  withSeed,
} from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { type StoreComplianceOptions, type StoreHarness, storeSessions } from './harness.js';

export type RaftLogHarness = StoreHarness<RaftLogStorage>;
export type RaftLogComplianceOptions = StoreComplianceOptions<RaftLogStorage>;

const enc = new TextEncoder();
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

/** An entry whose data names it, so a misplaced one shows. */
export function entry(index: number, term: number, size = 0): RaftEntry {
  const label = `${index}@${term}`;
  const data = new Uint8Array(Math.max(size, label.length));
  data.set(enc.encode(label));
  return { index, term, type: index % 7 === 0 ? 'conf' : 'normal', data };
}

function run(from: number, to: number, term: number, size = 0): RaftEntry[] {
  const out: RaftEntry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term, size));
  return out;
}

const brief = (es: readonly RaftEntry[]) => es.map((e) => [e.index, e.term, e.type, text(e.data).replace(/\0+$/, '')]);

async function errorOf(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

async function expectCode(
  fn: () => unknown,
  code: 'compacted' | 'log_unavailable' | 'closed' | 'invalid_argument',
): Promise<void> {
  const err = await errorOf(fn);
  expect(isParleyError(err, code), `expected a ${code} error, got ${String(err)}`).toBe(true);
}

export function raftLogStorageCompliance(options: RaftLogComplianceOptions): void {
  describe(`RaftLogStorage compliance: ${options.name}`, () => {
    const setup = storeSessions(options);

    it('starts empty', async () => {
      const { s } = await setup();
      expect(s.firstIndex()).toBe(1);
      expect(s.lastIndex()).toBe(0);
      expect(s.term(0)).toBe(0);
      expect(s.entries(1, 1)).toEqual([]);
      const init = s.initialState();
      expect(init.hardState).toEqual({ term: 0, vote: '', commit: 0 });
      expect(init.confState).toEqual({ voters: [], learners: [] });
      expect(s.snapshot().meta.index).toBe(0);
      expect(s.snapshot().meta.term).toBe(0);
      await expectCode(() => s.term(1), 'log_unavailable');
      await expectCode(() => s.entries(1, 2), 'log_unavailable');
    });

    it('appends and reads entries, terms and bounds', async () => {
      const { s } = await setup();
      await s.save({ entries: run(1, 3, 1) });
      await s.save({ entries: run(4, 10, 2) });
      expect(s.firstIndex()).toBe(1);
      expect(s.lastIndex()).toBe(10);
      expect(brief(s.entries(1, 11))).toEqual(brief([...run(1, 3, 1), ...run(4, 10, 2)]));
      expect(brief(s.entries(4, 6))).toEqual(brief(run(4, 5, 2)));
      expect(s.entries(5, 5)).toEqual([]);
      expect([s.term(0), s.term(3), s.term(4), s.term(10)]).toEqual([0, 1, 2, 2]);
      await expectCode(() => s.entries(0, 2), 'compacted');
      await expectCode(() => s.entries(5, 12), 'log_unavailable');
      await expectCode(() => s.term(11), 'log_unavailable');
    });

    it('truncates a conflicting suffix and appends the new entries', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 6, 1) });
      await ctx.s.save({ entries: run(4, 5, 2) });
      expect(ctx.s.lastIndex()).toBe(5);
      expect(brief(ctx.s.entries(1, 6))).toEqual(brief([...run(1, 3, 1), ...run(4, 5, 2)]));
      // A longer replacement, then a shorter one.
      await ctx.s.save({ entries: run(2, 8, 3) });
      await ctx.s.save({ entries: run(7, 7, 4) });
      const want = brief([entry(1, 1), ...run(2, 6, 3), entry(7, 4)]);
      expect(brief(ctx.s.entries(1, ctx.s.lastIndex() + 1))).toEqual(want);
      await ctx.reopen();
      expect(ctx.s.lastIndex()).toBe(7);
      expect(brief(ctx.s.entries(1, 8))).toEqual(want);
      await expectCode(() => ctx.s.term(8), 'log_unavailable');
    });

    it('rejects an append that would leave a gap, and changes nothing', async () => {
      const { s } = await setup();
      await s.save({ entries: run(1, 3, 1) });
      expect(
        await errorOf(() => s.save({ entries: run(5, 6, 1), hardState: { term: 9, vote: 'x', commit: 0 } })),
      ).toBeDefined();
      expect(s.lastIndex()).toBe(3);
      expect(s.initialState().hardState.term).toBe(0);
    });

    it('saves and reloads the hard state', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 4, 2), hardState: { term: 2, vote: 'peer-b', commit: 3 } });
      expect(ctx.s.initialState().hardState).toEqual({ term: 2, vote: 'peer-b', commit: 3 });
      await ctx.s.save({ hardState: { term: 3, vote: '', commit: 4 } });
      await ctx.reopen();
      expect(ctx.s.initialState().hardState).toEqual({ term: 3, vote: '', commit: 4 });
      expect(ctx.s.lastIndex()).toBe(4);
    });

    it('limits entries() by maxBytes but always returns at least one entry', async () => {
      const { s } = await setup();
      await s.save({ entries: run(1, 10, 1, 1000) });
      expect(s.entries(1, 11, 3500).map((e) => e.index)).toEqual([1, 2, 3]);
      expect(s.entries(4, 11, 1).map((e) => e.index)).toEqual([4]);
      expect(s.entries(4, 11, 0).map((e) => e.index)).toEqual([4]);
      expect(s.entries(1, 11, 1_000_000).length).toBe(10);
      expect(s.entries(9, 11, 2500).map((e) => e.index)).toEqual([9, 10]);
    });

    it('creates a snapshot without compacting, and keeps it across reopen', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: [...run(1, 4, 1), ...run(5, 8, 2)], hardState: { term: 2, vote: 'a', commit: 6 } });
      const conf = { voters: ['a', 'b', 'c'], learners: ['d'] };
      const snap = await ctx.s.createSnapshot(6, conf, enc.encode('state@6'));
      expect(snap.meta).toEqual({ index: 6, term: 2, confState: conf });
      expect(ctx.s.firstIndex()).toBe(1);
      expect(ctx.s.lastIndex()).toBe(8);
      await ctx.reopen();
      expect(ctx.s.snapshot().meta).toEqual({ index: 6, term: 2, confState: conf });
      expect(text(ctx.s.snapshot().data)).toBe('state@6');
      expect(ctx.s.initialState().confState).toEqual(conf);
      expect(ctx.s.firstIndex()).toBe(1);
      await expectCode(() => ctx.s.createSnapshot(9, conf, new Uint8Array(0)), 'log_unavailable');
      await expectCode(() => ctx.s.createSnapshot(5, conf, new Uint8Array(0)), 'compacted');
      expect(text(ctx.s.snapshot().data)).toBe('state@6');
    });

    it('records a snapshot again at the stored index, replacing it', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 8, 2), hardState: { term: 2, vote: 'a', commit: 8 } });
      const conf = { voters: ['a'], learners: [] };
      await ctx.s.createSnapshot(6, conf, enc.encode('first@6'));
      const again = await ctx.s.createSnapshot(6, { voters: ['a', 'b'], learners: [] }, enc.encode('second@6'));
      expect(again.meta).toEqual({ index: 6, term: 2, confState: { voters: ['a', 'b'], learners: [] } });
      await ctx.reopen();
      expect(text(ctx.s.snapshot().data)).toBe('second@6');
      expect(ctx.s.initialState().confState.voters).toEqual(['a', 'b']);
    });

    it('refuses a save whose snapshot is older than the stored one, and changes nothing', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 8, 2), hardState: { term: 2, vote: 'a', commit: 8 } });
      await ctx.s.createSnapshot(6, { voters: ['a'], learners: [] }, enc.encode('s6'));
      const old: RaftSnapshot = {
        meta: { index: 4, term: 2, confState: { voters: ['z'], learners: [] } },
        data: enc.encode('s4'),
      };
      await expectCode(
        () => ctx.s.save({ snapshot: old, entries: run(5, 5, 3), hardState: { term: 3, vote: '', commit: 5 } }),
        'invalid_argument',
      );
      const check = (s: RaftLogStorage) => {
        expect(text(s.snapshot().data)).toBe('s6');
        expect([s.firstIndex(), s.lastIndex(), s.term(5)]).toEqual([1, 8, 2]);
        expect(s.initialState().hardState).toEqual({ term: 2, vote: 'a', commit: 8 });
      };
      check(ctx.s);
      check(await ctx.reopen());
    });

    it('stores entries with empty data, also right after a snapshot replaced the log', async () => {
      const ctx = await setup();
      const empty = (index: number, term: number): RaftEntry => ({
        index,
        term,
        type: 'normal',
        data: new Uint8Array(0),
      });
      await ctx.s.save({ entries: [empty(1, 1), ...run(2, 3, 1)], hardState: { term: 1, vote: 'a', commit: 1 } });
      expect(ctx.s.entries(1, 2)[0]?.data.byteLength).toBe(0);
      // A leader's snapshot that disagrees with the log replaces it; its no-op entry follows.
      const snap: RaftSnapshot = {
        meta: { index: 10, term: 4, confState: { voters: ['a'], learners: [] } },
        data: enc.encode('s'),
      };
      await ctx.s.save({ snapshot: snap, entries: [empty(11, 4)], hardState: { term: 4, vote: '', commit: 10 } });
      expect(brief(ctx.s.entries(11, 12))).toEqual([[11, 4, 'normal', '']]);
      expect(brief((await ctx.reopen()).entries(11, 12))).toEqual([[11, 4, 'normal', '']]);
    });

    it('compacts a prefix: Compacted below, the compaction point still has its term', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: [...run(1, 5, 1), ...run(6, 10, 3)], hardState: { term: 3, vote: 'a', commit: 8 } });
      await ctx.s.createSnapshot(7, { voters: ['a'], learners: [] }, enc.encode('s7'));
      await ctx.s.compact(6);
      const check = (s: RaftLogStorage) => {
        expect(s.firstIndex()).toBe(7);
        expect(s.lastIndex()).toBe(10);
        expect(s.term(6)).toBe(3);
        expect(brief(s.entries(7, 11))).toEqual(brief(run(7, 10, 3)));
      };
      check(ctx.s);
      await expectCode(() => ctx.s.term(5), 'compacted');
      await expectCode(() => ctx.s.entries(6, 8), 'compacted');
      // Compacting below the compaction point is either refused as compacted or a no-op.
      const below = await errorOf(() => ctx.s.compact(3));
      if (below !== undefined) expect(isParleyError(below, 'compacted'), String(below)).toBe(true);
      check(ctx.s);
      expect(await errorOf(() => ctx.s.compact(9))).toBeDefined(); // past the snapshot
      check(await ctx.reopen());
      await ctx.s.compact(7);
      expect(ctx.s.firstIndex()).toBe(8);
      check2(await ctx.crashAndReopen());
      function check2(s: RaftLogStorage) {
        expect(s.firstIndex()).toBe(8);
        expect(s.term(7)).toBe(3);
        expect(text(s.snapshot().data)).toBe('s7');
      }
    });

    it('installs a snapshot that replaces the log, then appends after it', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 5, 1), hardState: { term: 1, vote: 'a', commit: 2 } });
      const snap: RaftSnapshot = {
        meta: { index: 20, term: 4, confState: { voters: ['a', 'b', 'c'], learners: [] } },
        data: enc.encode('leader state'),
      };
      await ctx.s.save({ snapshot: snap, hardState: { term: 4, vote: '', commit: 20 } });
      const check = (s: RaftLogStorage) => {
        expect(s.firstIndex()).toBe(21);
        expect(s.lastIndex()).toBe(20);
        expect(s.term(20)).toBe(4);
        expect(s.snapshot().meta.index).toBe(20);
        expect(text(s.snapshot().data)).toBe('leader state');
        expect(s.initialState()).toEqual({
          hardState: { term: 4, vote: '', commit: 20 },
          confState: { voters: ['a', 'b', 'c'], learners: [] },
        });
      };
      check(ctx.s);
      check(await ctx.reopen());
      await expectCode(() => ctx.s.entries(5, 6), 'compacted');
      await ctx.s.save({ entries: run(21, 23, 4) });
      await ctx.reopen();
      expect(brief(ctx.s.entries(21, 24))).toEqual(brief(run(21, 23, 4)));
    });

    it('applies snapshot, entries and hard state of one save together', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 3, 1) });
      await ctx.s.save({
        snapshot: { meta: { index: 10, term: 2, confState: { voters: ['a'], learners: [] } }, data: enc.encode('s') },
        entries: run(11, 12, 2),
        hardState: { term: 2, vote: 'a', commit: 11 },
      });
      const check = (s: RaftLogStorage) => {
        expect([s.firstIndex(), s.lastIndex(), s.term(10)]).toEqual([11, 12, 2]);
        expect(s.initialState().hardState.commit).toBe(11);
      };
      check(ctx.s);
      check(await ctx.reopen());
    });

    it('keeps every acknowledged save across a crash', async () => {
      const ctx = await setup();
      for (let i = 1; i <= 30; i++) {
        await ctx.s.save({
          entries: [entry(i, 1 + Math.floor(i / 10))],
          hardState: { term: 3, vote: 'a', commit: i - 1 },
        });
      }
      const s = await ctx.crashAndReopen();
      expect(s.lastIndex()).toBe(30);
      expect(s.initialState().hardState).toEqual({ term: 3, vote: 'a', commit: 29 });
      const want = Array.from({ length: 6 }, (_, k) => entry(25 + k, 1 + Math.floor((25 + k) / 10)));
      expect(brief(s.entries(25, 31))).toEqual(brief(want));
    });

    it('a crash during a save leaves it entirely applied or entirely absent', async () => {
      const ctx = await setup();
      await ctx.s.save({ entries: run(1, 10, 1), hardState: { term: 1, vote: 'a', commit: 5 } });
      for (let round = 1; round <= 3; round++) {
        const before = ctx.s.lastIndex();
        const from = before - 2; // truncates two entries and appends a long run
        const term = 1 + round;
        const pending = ctx.s.save({
          entries: run(from, from + 300, term, 64),
          hardState: { term, vote: 'b', commit: from - 1 },
        });
        pending.catch(() => undefined);
        const s = await ctx.crashAndReopen();
        const hs = s.initialState().hardState;
        if (s.lastIndex() === before) {
          expect(hs.term).toBe(term - 1);
          expect(s.term(before)).toBe(term - 1);
        } else {
          expect(s.lastIndex()).toBe(from + 300);
          expect(hs).toEqual({ term, vote: 'b', commit: from - 1 });
          expect(brief(s.entries(from, from + 2))).toEqual(brief(run(from, from + 1, term, 64)));
        }
        if (s.lastIndex() === before) {
          // Make progress for the next round all the same.
          await s.save({ entries: run(from, from + 300, term, 64), hardState: { term, vote: 'b', commit: from - 1 } });
        }
      }
    });

    it('rejects writes after close with a closed error', async () => {
      const { s } = await setup();
      await s.save({ entries: run(1, 2, 1) });
      await s.close();
      await expectCode(() => s.save({ entries: run(3, 3, 1) }), 'closed');
      await expectCode(() => s.compact(0), 'closed');
      await expectCode(() => s.createSnapshot(1, { voters: [], learners: [] }, new Uint8Array(0)), 'closed');
      await s.close();
    });

    it('matches a reference model over random appends, truncations, snapshots, compactions and crashes', async () => {
      await withSeed(options.seed ?? testSeed(6_2026), async (seed) => {
        const rng = new SeededRandom(seed);
        const ctx = await setup();
        // The reference: every index ≥ 1 that is still in the log, the compaction point, hard state, snapshot.
        let log: RaftEntry[] = [];
        let offset = { index: 0, term: 0 };
        let hs: HardState = { term: 0, vote: '', commit: 0 };
        let snap = { index: 0, term: 0, data: '' };
        let maxTerm = 1;
        const last = () => offset.index + log.length;
        const termAt = (i: number) => (i === offset.index ? offset.term : log[i - offset.index - 1]!.term);
        const steps = options.randomSteps ?? 300;
        for (let step = 0; step < steps; step++) {
          const roll = rng.int(100);
          const where = `step ${step}`;
          if (roll < 40) {
            // Append, truncating a suffix past the commit index.
            const lo = Math.max(offset.index + 1, hs.commit + 1);
            const from = lo + rng.int(last() + 2 - lo);
            if (rng.int(3) === 0) maxTerm++;
            const n = 1 + rng.int(6);
            const es = run(from, from + n - 1, maxTerm, rng.int(40));
            const commit = rng.int(2) === 0 ? hs.commit : hs.commit + rng.int(from + n - hs.commit);
            const nextHs = { term: maxTerm, vote: rng.int(2) === 0 ? 'a' : '', commit };
            await ctx.s.save({ entries: es, hardState: nextHs });
            log = [...log.slice(0, from - offset.index - 1), ...es];
            hs = nextHs;
          } else if (roll < 50 && hs.commit > snap.index) {
            const at = snap.index + 1 + rng.int(hs.commit - snap.index);
            const index = Math.max(at, offset.index);
            const data = `app@${index}.${step}`;
            await ctx.s.createSnapshot(index, { voters: ['a'], learners: [] }, enc.encode(data));
            snap = { index, term: termAt(index), data };
          } else if (roll < 58 && snap.index > offset.index) {
            const to = offset.index + 1 + rng.int(snap.index - offset.index);
            await ctx.s.compact(to);
            const term = termAt(to);
            log = log.slice(to - offset.index);
            offset = { index: to, term };
          } else if (roll < 62) {
            // A leader's snapshot, either agreeing with the log or replacing it.
            const index = Math.max(hs.commit, snap.index) + 1 + rng.int(4);
            const agrees = index <= last() && rng.int(2) === 0;
            if (!agrees) maxTerm++;
            const term = agrees ? termAt(index) : maxTerm;
            const data = `leader@${index}.${step}`;
            const nextHs = { term: Math.max(hs.term, term), vote: '', commit: index };
            await ctx.s.save({
              snapshot: {
                meta: { index, term, confState: { voters: ['a', 'b'], learners: [] } },
                data: enc.encode(data),
              },
              hardState: nextHs,
            });
            log = agrees ? log.slice(index - offset.index) : [];
            offset = { index, term };
            snap = { index, term, data };
            hs = nextHs;
          } else if (roll < 66) {
            await ctx.reopen();
          } else if (roll < 70) {
            await ctx.crashAndReopen();
          } else {
            const s = ctx.s;
            expect([s.firstIndex(), s.lastIndex()], where).toEqual([offset.index + 1, last()]);
            expect(s.initialState().hardState, where).toEqual(hs);
            expect(s.snapshot().meta.index, where).toBe(snap.index);
            expect(s.snapshot().meta.term, where).toBe(snap.term);
            expect(text(s.snapshot().data), where).toBe(snap.data);
            expect(s.term(offset.index), where).toBe(offset.term);
            if (log.length > 0) {
              const lo = offset.index + 1 + rng.int(log.length);
              const hi = lo + rng.int(last() + 2 - lo);
              expect(brief(s.entries(lo, hi)), `${where}: entries(${lo}, ${hi})`).toEqual(
                brief(log.slice(lo - offset.index - 1, hi - offset.index - 1)),
              );
              const i = lo + rng.int(last() + 1 - lo);
              expect(s.term(i), `${where}: term(${i})`).toBe(termAt(i));
            }
          }
        }
        const s = await ctx.reopen();
        expect(brief(s.entries(s.firstIndex(), s.lastIndex() + 1))).toEqual(brief(log));
      });
    });
  });
}
