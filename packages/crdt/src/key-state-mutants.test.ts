/**
 * Rules of one key's state that the mutation run (docs/simulation.md,
 * "Mutation testing (Stryker)") found unchecked: the join is a lattice join
 * for every pair of states, hand-built ties a faulty peer could send included;
 * the share with the latest stamp sets a counter's TTL and version; two copies
 * of one incarnation keep the earlier createdAt; a late stale copy changes
 * nothing; and the drift check and the clock see a counter's latest share,
 * not its birth stamp.
 */
import { testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryOf, joinKeyStates } from './key-state.js';
import { NamespaceReplica } from './namespace.js';
import { Register } from './register.js';
import type { CounterShare, CounterState, KeyState, TombstoneState } from './types.js';

const SEED = testSeed(20_261_130);
const T0 = 1_750_000_000_000;

function share(wallMs: number, logical: number, seq: number, ttlSeconds: number, inc = 1, dec = 0): CounterShare {
  return { inc, dec, wallMs, logical, seq, ttlSeconds };
}

function counter(
  shares: Array<[string, CounterShare]>,
  createdAt = 0,
  birth = { wallMs: 5, logical: 0, node: 'a' },
): CounterState {
  return { type: 'counter', key: 'k', ...birth, createdAt, shares: new Map(shares) };
}

/** A comparable plain form of a key state (shares as sorted entries). */
function plain(s: KeyState): unknown {
  if (s.type === 'counter') return { ...s, shares: [...s.shares].sort((x, y) => (x[0] < y[0] ? -1 : 1)) };
  if (s instanceof Register) return { ...s };
  return s;
}

describe('joinKeyStates is a lattice join on every input', () => {
  // Tiny domains, so that equal stamps with different seq, TTL, createdAt,
  // value or type (what only a faulty peer sends) come up often.
  const small = fc.integer({ min: 1, max: 2 });
  const stamp = { wallMs: small, logical: small, node: fc.constantFrom('a', 'b') };
  const shareArb = fc.record({
    inc: fc.integer({ min: 0, max: 3 }),
    dec: fc.integer({ min: 0, max: 3 }),
    wallMs: small,
    logical: small,
    seq: small,
    ttlSeconds: small,
  });
  const state: fc.Arbitrary<KeyState> = fc.oneof(
    fc
      .record({ ...stamp, seq: small, ttlSeconds: small, createdAt: small, value: fc.constantFrom('x', 'y', 1) })
      .map((r) => new Register('k', r.wallMs, r.logical, r.node, r.seq, r.ttlSeconds, r.createdAt, r.value)),
    fc.record({ ...stamp, seq: small }).map((r): TombstoneState => ({ type: 'tombstone', key: 'k', ...r })),
    fc
      .record({
        ...stamp,
        createdAt: small,
        shares: fc.dictionary(fc.constantFrom('a', 'b'), shareArb, { minKeys: 1 }),
      })
      .map(
        (r): CounterState => ({
          type: 'counter',
          key: 'k',
          wallMs: r.wallMs,
          logical: r.logical,
          node: r.node,
          createdAt: r.createdAt,
          shares: new Map(Object.entries(r.shares).sort((x, y) => (x[0] < y[0] ? -1 : 1))),
        }),
      ),
  );

  it('commutative, associative and idempotent', () => {
    withSeed(SEED, (seed) =>
      fc.assert(
        fc.property(state, state, state, (a, b, c) => {
          expect(plain(joinKeyStates(a, b))).toEqual(plain(joinKeyStates(b, a)));
          expect(plain(joinKeyStates(joinKeyStates(a, b), c))).toEqual(plain(joinKeyStates(a, joinKeyStates(b, c))));
          expect(joinKeyStates(a, a)).toBe(a);
        }),
        { numRuns: 2000, seed },
      ),
    );
  });

  it('a counter wins the tie with the tombstone or register its birth stamp names, in either order', () => {
    const tomb: TombstoneState = { type: 'tombstone', key: 'k', wallMs: 5, logical: 0, node: 'a', seq: 9 };
    const reg = new Register('k', 5, 0, 'a', 9, 60, 5, 'v');
    const c = counter([['b', share(7, 0, 1, 60)]]);
    for (const other of [tomb, reg]) {
      expect(joinKeyStates(other, c)).toBe(c);
      expect(joinKeyStates(c, other)).toBe(c);
    }
    // and a tombstone wins that tie with a register
    expect(joinKeyStates(tomb, reg)).toBe(tomb);
    expect(joinKeyStates(reg, tomb)).toBe(tomb);
  });

  it('of two tombstones with one stamp, the greater seq wins in either order', () => {
    const t1: TombstoneState = { type: 'tombstone', key: 'k', wallMs: 5, logical: 0, node: 'a', seq: 1 };
    const t2: TombstoneState = { ...t1, seq: 2 };
    expect(joinKeyStates(t1, t2)).toBe(t2);
    expect(joinKeyStates(t2, t1)).toBe(t2);
  });

  it('of two registers with one stamp, the order is seq, then TTL, then createdAt, then the value', () => {
    const base = new Register('k', 5, 0, 'a', 1, 60, 5, 'v');
    const variants = [
      new Register('k', 5, 0, 'a', 2, 10, 1, 'a'), // greater seq
      new Register('k', 5, 0, 'a', 1, 70, 1, 'a'), // same seq, longer TTL
      new Register('k', 5, 0, 'a', 1, 60, 6, 'a'), // same seq and TTL, later createdAt
      new Register('k', 5, 0, 'a', 1, 60, 5, 'w'), // all the same but a greater value text
    ];
    for (const v of variants) {
      expect(joinKeyStates(base, v)).toBe(v);
      expect(joinKeyStates(v, base)).toBe(v);
    }
  });
});

describe('a counter incarnation', () => {
  it('takes TTL, version and updatedAt from the share with the latest stamp (wall, then logical, then node)', () => {
    // Shares are held in node order; the latest one is sometimes first, sometimes last.
    const cases: Array<[Array<[string, CounterShare]>, string, number]> = [
      [
        [
          ['a', share(10, 0, 1, 5)],
          ['b', share(20, 0, 1, 7)],
        ],
        'b',
        20 + 7000,
      ],
      [
        [
          ['a', share(20, 0, 1, 5)],
          ['b', share(10, 9, 1, 7)],
        ],
        'a',
        20 + 5000,
      ],
      [
        [
          ['a', share(10, 5, 1, 5)],
          ['b', share(10, 1, 1, 7)],
        ],
        'a',
        10 + 5000,
      ],
      [
        [
          ['a', share(10, 1, 1, 5)],
          ['b', share(10, 5, 1, 7)],
        ],
        'b',
        10 + 7000,
      ],
      [
        [
          ['a', share(10, 3, 1, 5)],
          ['b', share(10, 3, 1, 7)],
        ],
        'b',
        10 + 7000,
      ],
    ];
    for (const [shares, node, expiresAt] of cases) {
      const e = entryOf(counter(shares));
      expect(e.version.endsWith(`.${node}`)).toBe(true);
      expect(e.expiresAt).toBe(expiresAt);
      expect(e.value).toBe(2);
    }
  });

  it('started on one key by two replicas at once is one incarnation, created at the earlier start', () => {
    const a = new NamespaceReplica({ namespace: 'ns', replicaId: 'a' });
    const b = new NamespaceReplica({ namespace: 'ns', replicaId: 'b' });
    const da = a.increment('k', 2, T0 + 100);
    const db = b.increment('k', 3, T0);
    a.merge(db, T0 + 200);
    b.merge(da, T0 + 200);
    for (const r of [a, b]) {
      expect(r.get('k', T0 + 200)).toMatchObject({ value: 5, createdAt: T0 });
    }
  });

  it('a late stale copy of an incarnation changes nothing and reports no change', () => {
    const a = new NamespaceReplica({ namespace: 'ns', replicaId: 'a' });
    const b = new NamespaceReplica({ namespace: 'ns', replicaId: 'b' });
    const stale = a.increment('k', 1, T0);
    const fresh = a.increment('k', 1, T0 + 10);
    const c = new NamespaceReplica({ namespace: 'ns', replicaId: 'c' });
    b.merge(c.increment('k', 1, T0 + 5), T0 + 20); // b holds the incarnation with another share too
    // Deliver only the state of `fresh`, not its context, so `stale`'s dot is still unseen.
    b.merge({ ...fresh, context: new Map() }, T0 + 20);
    const before = b.stateOf('k');
    expect(b.merge(stale, T0 + 30)).toEqual({ changedKeys: [], rejectedStates: 0 });
    expect(b.stateOf('k')).toBe(before);
    expect(b.get('k', T0 + 30)?.value).toBe(3);
  });

  it('is judged by its latest share for the drift check, and the clock moves past that share', () => {
    const a = new NamespaceReplica({ namespace: 'ns', replicaId: 'a', maxClockDriftMs: 1000 });
    const b = new NamespaceReplica({ namespace: 'ns', replicaId: 'b', maxClockDriftMs: 1000 });
    a.increment('k', 1, T0);
    // a's clock jumps: its next share is stamped 5 s ahead of b's clock, its birth stamp is not
    const ahead = a.increment('k', 1, T0 + 5000);
    expect(b.merge(ahead, T0)).toEqual({ changedKeys: [], rejectedStates: 1 });
    // within the bound the share is taken, and b's next stamp orders after it
    for (let i = 0; i < 3; i++) a.increment('k', 1, T0 + 5000);
    const state = a.stateOf('k') as CounterState;
    const last = state.shares.get('a') as CounterShare;
    expect(last.logical).toBe(3);
    expect(b.merge(a.state(), T0 + 4500).rejectedStates).toBe(0);
    // the merge observed the share (T0 + 5000, logical 3): logical 4; the write is the next stamp
    b.set('other', 1, T0 + 4500);
    expect(b.get('other', T0 + 4500)?.version).toBe(`${(T0 + 5000).toString(36)}.5.b`);
  });

  it('the clock observes the latest wall of all shares and the greatest logical at that wall', () => {
    const W = T0 + 1000;
    const birth = { wallMs: T0, logical: 0, node: 'a' };
    const cases: Array<[Array<[string, CounterShare]>, string]> = [
      // the latest wall is on the first share in node order
      [
        [
          ['a', share(W + 100, 0, 1, 60)],
          ['b', share(W, 2, 1, 60)],
        ],
        `${(W + 100).toString(36)}.2.c`,
      ],
      // at the latest wall, the greatest logical is on the first share
      [
        [
          ['a', share(W, 7, 1, 60)],
          ['b', share(W, 2, 1, 60)],
        ],
        `${W.toString(36)}.9.c`,
      ],
    ];
    for (const [shares, version] of cases) {
      const c = new NamespaceReplica({ namespace: 'ns', replicaId: 'c' });
      const state = counter(shares, T0, birth);
      c.merge({ namespace: 'ns', states: [state], context: new Map() }, W);
      c.set('other', 1, W);
      expect(c.get('other', W)?.version).toBe(version);
    }
  });

  it('replaced by a write, sends the dots of every share it held as superseded', () => {
    const a = new NamespaceReplica({ namespace: 'ns', replicaId: 'a' });
    const b = new NamespaceReplica({ namespace: 'ns', replicaId: 'b' });
    a.merge(b.increment('k', 1, T0), T0);
    a.increment('k', 1, T0 + 1);
    const d = a.set('k', 'v', T0 + 2);
    expect(d.context).toEqual(
      new Map([
        ['a', [1, 1]],
        ['b', [1, 1]],
      ]),
    );
  });
});

describe('entryOf', () => {
  it('reads a plain register state as its entry', () => {
    const e = entryOf({
      type: 'register',
      key: 'k',
      wallMs: 5,
      logical: 1,
      node: 'a',
      seq: 1,
      ttlSeconds: 2,
      createdAt: 3,
      value: 'v',
    });
    expect([e.value, e.createdAt, e.updatedAt, e.expiresAt]).toEqual(['v', 3, 5, 2005]);
  });
});
