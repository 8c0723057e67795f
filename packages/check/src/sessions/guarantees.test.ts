import { type Random, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { testSeed, withSeed } from '../test-util.js';
import { checkSessionGuarantees, type SessionGuarantee } from './guarantees.js';
import type { SessionOp, SessionOutcome } from './history.js';
import { referenceSessionGuarantees } from './reference.js';

type Op = SessionOp<number>;
const compare = (a: number, b: number) => a - b;
const w = (session: string, key: string, id: string, version: number, outcome: SessionOutcome = 'ok'): Op => ({
  kind: 'write',
  session,
  key,
  id,
  version,
  outcome,
});
const r = (session: string, key: string, saw: string | null, outcome: SessionOutcome = 'ok'): Op => ({
  kind: 'read',
  session,
  key,
  saw,
  outcome,
});
type Level = SessionGuarantee | 'causal';
const check = (ops: Op[], ...levels: Level[]) => checkSessionGuarantees(ops, { guarantees: new Set(levels), compare });
const types = (ops: Op[], ...levels: Level[]) => check(ops, ...levels).violations.map((v) => v.type);

describe('session guarantees: known histories', () => {
  it('read-your-writes: a session that reads below its own acknowledged write', () => {
    const bad = [w('a', 'x', 'x1', 1), w('b', 'x', 'x0', 0), r('a', 'x', 'x0')];
    expect(types(bad, 'ryw')).toEqual(['ryw']);
    expect(types(bad, 'mr')).toEqual([]);
    // Another session may read below it: nothing was promised to b.
    expect(types([w('a', 'x', 'x1', 1), r('b', 'x', null)], 'ryw')).toEqual([]);
    // An ambiguous own write promises nothing until someone sees it.
    expect(types([w('a', 'x', 'x1', 1, 'unknown'), r('a', 'x', null)], 'ryw')).toEqual([]);
    // The session's own write, seen: fine.
    expect(types([w('a', 'x', 'x1', 1), r('a', 'x', 'x1')], 'ryw', 'mr')).toEqual([]);
  });

  it('monotonic reads: a later read goes back in time', () => {
    const bad = [w('b', 'x', 'x1', 1), w('b', 'x', 'x2', 2), r('a', 'x', 'x2'), r('a', 'x', 'x1')];
    expect(types(bad, 'mr')).toEqual(['mr']);
    expect(types(bad, 'ryw', 'mw', 'wfr')).toEqual([]);
    expect(types([w('b', 'x', 'x1', 1), r('a', 'x', 'x1'), r('a', 'x', null)], 'mr')).toEqual(['mr']);
  });

  it('monotonic writes: a reader sees a later write of a session but not its earlier one', () => {
    // a writes y then x; c sees x, and then (monotonic reads) must see y.
    const bad = [w('a', 'y', 'y1', 1), w('a', 'x', 'x1', 1), r('c', 'x', 'x1'), r('c', 'y', null)];
    expect(types(bad, 'mw', 'mr')).toEqual(['mw']);
    // Without monotonic reads the second read may go to a replica without either write.
    expect(types(bad, 'mw')).toEqual([]);
    expect(types(bad, 'mr')).toEqual([]);
    // Arbitration must follow the session's order on one key.
    expect(types([w('a', 'x', 'x1', 5), w('a', 'x', 'x2', 3)], 'mw')).toEqual(['mw-order']);
  });

  it('writes-follow-reads: a write seen without what its writer had read', () => {
    const bad = [w('b', 'y', 'y1', 1), r('a', 'y', 'y1'), w('a', 'x', 'x1', 1), r('c', 'x', 'x1'), r('c', 'y', null)];
    expect(types(bad, 'wfr', 'mr')).toEqual(['wfr']);
    expect(types(bad, 'mw', 'mr')).toEqual([]);
    expect(types([w('b', 'x', 'x9', 9), r('a', 'x', 'x9'), w('a', 'x', 'x1', 1)], 'wfr')).toEqual(['wfr-order']);
  });

  it('causal: a dependency two hops away is dropped', () => {
    // y1 → (a reads y1, writes z1) → (b reads z1, writes x1) → c reads x1, then y.
    const bad = [
      w('s', 'y', 'y1', 1),
      r('a', 'y', 'y1'),
      w('a', 'z', 'z1', 1),
      r('b', 'z', 'z1'),
      w('b', 'x', 'x1', 1),
      r('c', 'x', 'x1'),
      r('c', 'y', null),
    ];
    expect(types(bad, 'causal')).toEqual(['causal']);
    // Writes-follow-reads carries the dependency through each hop; the four guarantees
    // together are causal consistency, and without writes-follow-reads it is not promised.
    expect(types(bad, 'ryw', 'mr', 'mw', 'wfr')).toEqual(['wfr']);
    expect(types(bad, 'ryw', 'mr', 'mw')).toEqual([]);
    // A write arbitrated before one it causally follows.
    expect(types([w('a', 'x', 'x5', 5), r('b', 'x', 'x5'), w('b', 'x', 'x2', 2)], 'causal')).toEqual(['causal-order']);
  });

  it('thin air and cycles', () => {
    expect(types([w('a', 'x', 'x1', 1, 'fail'), r('b', 'x', 'x1')], 'ryw')).toEqual(['thin-air']);
    expect(types([r('b', 'x', 'nobody')])).toEqual(['thin-air']);
    expect(types([r('a', 'x', 'x1'), w('a', 'x', 'x1', 1)])).toEqual(['cycle']);
  });

  it('refuses a history it cannot read, with a typed error', () => {
    expect(() => check([w('a', 'x', 'x1', 1), w('b', 'x', 'x1', 2)])).toThrow(/appears twice/);
    expect(() => check([{ kind: 'write', session: 'a', key: 'x', id: 'x1', outcome: 'ok' }])).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });
});

/** A random small history: 2–3 sessions, 2 keys, at most 4 writes, mostly acknowledged calls. */
function generate(rng: Random): Op[] {
  const sessions = ['a', 'b', 'c'].slice(0, 2 + rng.int(2));
  const keys = ['x', 'y'];
  const versions = [1, 2, 3, 4].sort(() => rng.float() - 0.5);
  const ops: Op[] = [];
  const written: { key: string; id: string }[] = [];
  const count = 3 + rng.int(4);
  for (let i = 0; i < count; i++) {
    const session = sessions[rng.int(sessions.length)] as string;
    const key = keys[rng.int(keys.length)] as string;
    const roll = rng.float();
    const outcome: SessionOutcome = roll < 0.85 ? 'ok' : roll < 0.93 ? 'unknown' : 'fail';
    if (written.length < 3 && rng.float() < 0.5) {
      const id = `${key}${written.length}`;
      written.push({ key, id });
      ops.push(w(session, key, id, versions[written.length - 1] as number, outcome));
    } else {
      const mine = written.filter((x) => x.key === key);
      const pick = rng.int(mine.length + 1);
      ops.push(r(session, key, pick === mine.length ? null : (mine[pick] as { id: string }).id, outcome));
    }
  }
  return ops;
}

describe('session guarantees: the checker against the brute-force reference', () => {
  const levels: Level[][] = [['ryw'], ['mr'], ['mw', 'mr'], ['wfr', 'mr'], ['ryw', 'mr', 'mw', 'wfr'], ['causal']];
  for (const set of levels) {
    it(`agrees on random small histories: ${set.join('+')}`, () => {
      withSeed(testSeed(20261202), (seed) => {
        const rng = new SeededRandom(seed);
        const rounds = 250;
        const verdicts = { ok: 0, bad: 0 };
        const disagreements: string[] = [];
        for (let round = 0; round < rounds; round++) {
          const ops = generate(rng);
          const expected = referenceSessionGuarantees(ops, { guarantees: new Set(set), compare });
          const got = check(ops, ...set).ok;
          if (got !== expected)
            disagreements.push(`round ${round}: checker ${got}, reference ${expected}\n${JSON.stringify(ops)}`);
          verdicts[got ? 'ok' : 'bad']++;
        }
        expect(disagreements.slice(0, 2)).toEqual([]);
        // Both verdicts are common, so the agreement means something.
        expect(verdicts.ok).toBeGreaterThan(rounds / 10);
        expect(verdicts.bad).toBeGreaterThan(rounds / 20);
      });
    });
  }
});
