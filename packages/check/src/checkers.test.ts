import { InvalidArgumentError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { type ConvergenceSpec, checkConvergence, type EventualWrite } from './convergence.js';
import { checkDurability, type RecoveredState } from './durability.js';
import { checkFencing, type FenceEvent } from './fencing.js';
import { InvariantRegistry, InvariantViolationError } from './invariants.js';
import { type RaftClusterView, type RaftNodeView, registerRaftInvariants } from './raft-invariants.js';

// ---------------------------------------------------------------------------
// Convergence: a toy LWW map, stamps [time, node] compared lexicographically.

type Stamp = readonly [number, string];
type Cell = { stamp: Stamp; value: string | null };
type Replica = ReadonlyMap<string, Cell>;
const compare = (a: Stamp, b: Stamp) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
const spec: ConvergenceSpec<Replica, Stamp> = {
  equal: (x, y) =>
    x.size === y.size &&
    [...x].every(([k, c]) => {
      const d = y.get(k);
      return d !== undefined && compare(c.stamp, d.stamp) === 0 && c.value === d.value;
    }),
  stampOf: (s, key) => s.get(key)?.stamp,
  compare,
};
const replica = (cells: Record<string, Cell>): Replica => new Map(Object.entries(cells));

describe('checkConvergence', () => {
  const w1: EventualWrite<Stamp> = { key: 'k', stamp: [1, 'a'] };
  const w2: EventualWrite<Stamp> = { key: 'k', stamp: [2, 'b'] };

  it('passes when replicas agree and every acknowledged write survives or lost to a later one', () => {
    const s = replica({ k: { stamp: [2, 'b'], value: 'two' } });
    const r = checkConvergence(
      new Map([
        ['a', s],
        ['b', replica({ k: { stamp: [2, 'b'], value: 'two' } })],
      ]),
      [w1, w2],
      spec,
    );
    expect(r).toEqual({ ok: true, violations: [], truncated: false });
  });

  it('reports replicas that diverged', () => {
    const r = checkConvergence(
      new Map([
        ['a', replica({ k: { stamp: [2, 'b'], value: 'two' } })],
        ['b', replica({ k: { stamp: [1, 'a'], value: 'one' } })],
      ]),
      [],
      spec,
    );
    expect(r.ok).toBe(false);
    expect(r.violations).toEqual([{ type: 'diverged', replicas: ['a', 'b'] }]);
  });

  it('reports an acknowledged write that vanished, or lost to an older one', () => {
    const older = replica({ k: { stamp: [1, 'a'], value: 'one' } });
    const r = checkConvergence(new Map([['a', older]]), [w1, w2], spec);
    expect(r.violations).toEqual([{ type: 'lost-write', replica: 'a', key: 'k', write: w2, found: [1, 'a'] }]);
    const empty = checkConvergence(new Map([['a', replica({})]]), [w1], spec);
    expect(empty.violations[0]).toMatchObject({ type: 'lost-write', found: undefined });
  });

  it('excuses a write whose winning delete was collected, but not one newer than the delete', () => {
    const del: EventualWrite<Stamp> = { key: 'k', stamp: [3, 'a'], delete: true };
    expect(checkConvergence(new Map([['a', replica({})]]), [w1, del], spec).ok).toBe(true);
    const late: EventualWrite<Stamp> = { key: 'k', stamp: [4, 'c'] };
    expect(checkConvergence(new Map([['a', replica({})]]), [w1, del, late], spec).ok).toBe(false);
  });

  it('breaks LWW ties by node id through the injected order', () => {
    const tieA: EventualWrite<Stamp> = { key: 'k', stamp: [5, 'a'] };
    const tieB: EventualWrite<Stamp> = { key: 'k', stamp: [5, 'b'] };
    expect(
      checkConvergence(new Map([['x', replica({ k: { stamp: [5, 'b'], value: 'b' } })]]), [tieA, tieB], spec).ok,
    ).toBe(true);
    expect(
      checkConvergence(new Map([['x', replica({ k: { stamp: [5, 'a'], value: 'a' } })]]), [tieA, tieB], spec).ok,
    ).toBe(false);
  });

  it('bounds its report', () => {
    const writes = Array.from({ length: 10 }, (_, i): EventualWrite<Stamp> => ({ key: `k${i}`, stamp: [i, 'a'] }));
    const r = checkConvergence(new Map([['a', replica({})]]), writes, { ...spec, maxViolations: 3 });
    expect(r.violations).toHaveLength(3);
    expect(r.truncated).toBe(true);
    expect(r.ok).toBe(false);
  });
});

describe('checkFencing', () => {
  const grant = (fence: number, resource = 'L'): FenceEvent => ({ type: 'grant', resource, fence });
  const write = (fence: number, accepted: boolean, resource = 'L'): FenceEvent => ({
    type: 'write',
    resource,
    fence,
    accepted,
  });

  it('accepts increasing grants, current writes and rejected stale writes', () => {
    const r = checkFencing([
      grant(1),
      write(1, true),
      grant(2),
      write(1, false),
      write(2, true),
      grant(1, 'M'),
      write(1, true, 'M'),
    ]);
    expect(r.ok).toBe(true);
  });

  it('reports an accepted write older than a grant', () => {
    const r = checkFencing([grant(1), grant(2), write(1, true)]);
    expect(r.violations).toEqual([{ type: 'stale-write-accepted', index: 2, resource: 'L', fence: 1, newest: 2 }]);
  });

  it('reports grants that do not increase and writes with a fence never granted', () => {
    expect(checkFencing([grant(2), grant(2)]).violations[0]).toMatchObject({
      type: 'grant-not-increasing',
      previous: 2,
    });
    expect(checkFencing([grant(1), write(2, true)]).violations[0]).toMatchObject({ type: 'ungranted-write-accepted' });
    expect(checkFencing([write(1, true)]).violations[0]).toMatchObject({ type: 'ungranted-write-accepted' });
  });
});

describe('checkDurability', () => {
  const acked = [
    { key: 'a', version: 'v1', index: 3 },
    { key: 'b', version: 'v2', index: 5 },
    { key: 'a', version: 'v3', index: 8 },
  ];

  it('passes when the recovered log and snapshot hold every acknowledged write', () => {
    const recovered: RecoveredState = {
      snapshotIndex: 6,
      // a@3 was overwritten at 7 before the snapshot; b@5 is still there.
      snapshot: new Map([
        ['a', { version: 'v9', index: 7 }],
        ['b', { version: 'v2', index: 5 }],
      ]),
      entries: new Map([[8, { key: 'a', version: 'v3' }]]),
    };
    expect(checkDurability(acked, recovered).ok).toBe(true);
  });

  it('reports a write lost by a crash (missing from the log) and one replaced at its index', () => {
    const lost = checkDurability(acked, { snapshotIndex: 0, entries: new Map([[3, { key: 'a', version: 'v1' }]]) });
    expect(lost.violations.map((v) => [v.type, v.write.index])).toEqual([
      ['missing', 5],
      ['missing', 8],
    ]);
    const replaced = checkDurability([acked[0]!], {
      snapshotIndex: 0,
      entries: new Map([[3, { key: 'a', version: 'vX' }]]),
    });
    expect(replaced.violations[0]).toMatchObject({ type: 'replaced', found: { version: 'vX' } });
  });

  it('reports a snapshot that rolled a key back', () => {
    const r = checkDurability([acked[1]!], {
      snapshotIndex: 9,
      snapshot: new Map([['b', { version: 'v0', index: 2 }]]),
      entries: new Map(),
    });
    expect(r.violations[0]).toMatchObject({ type: 'replaced', found: { index: 2 } });
  });
});

describe('InvariantRegistry', () => {
  it('runs checks, reports each message, and treats a throwing check as a violation', () => {
    const reg = new InvariantRegistry<number>();
    reg.registerInvariant('non-negative', (n) => (n >= 0 ? undefined : `${n} < 0`));
    reg.registerInvariant('even', (n) => n % 2 === 0, 'must be even');
    reg.registerInvariant('many', (n) => (n > 100 ? ['too big', 'way too big'] : []));
    reg.registerInvariant('boom', (n) => {
      if (n === 13) throw new Error('unlucky');
    });
    expect(reg.checkInvariants(4)).toEqual([]);
    expect(reg.checkInvariants(-1)).toEqual([
      { invariant: 'non-negative', message: '-1 < 0' },
      { invariant: 'even', message: 'must be even' },
    ]);
    expect(reg.checkInvariants(102).map((v) => v.message)).toEqual(['too big', 'way too big']);
    expect(reg.checkInvariants(13).map((v) => v.invariant)).toEqual(['even', 'boom']);
    expect(() => reg.assertInvariants(3)).toThrow(InvariantViolationError);
    expect(reg.list().map((i) => i.name)).toEqual(['non-negative', 'even', 'many', 'boom']);
  });

  it('refuses duplicate or malformed names and unregisters', () => {
    const reg = new InvariantRegistry<void>();
    const remove = reg.registerInvariant('x/y', () => undefined);
    expect(() => reg.registerInvariant('x/y', () => undefined)).toThrow(InvalidArgumentError);
    expect(() => reg.registerInvariant('Bad Name', () => undefined)).toThrow(InvalidArgumentError);
    remove();
    expect(reg.size).toBe(0);
  });
});

// ---------------------------------------------------------------------------
// Raft invariants over hand-built cluster views.

function node(id: string, terms: number[], o: Partial<Omit<RaftNodeView, 'termAt'>> = {}): RaftNodeView {
  return {
    id,
    term: o.term ?? terms.at(-1) ?? 0,
    isLeader: o.isLeader ?? false,
    commitIndex: o.commitIndex ?? 0,
    firstIndex: 1,
    lastIndex: terms.length,
    termAt: (i) => terms[i - 1]!,
    ...o,
  };
}

function raftRegistry() {
  const reg = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(reg);
  return reg;
}

describe('Raft invariants', () => {
  it('hold on a healthy run: election, replication, commit, a new leader', () => {
    const reg = raftRegistry();
    const views: RaftClusterView[] = [
      { nodes: [node('a', [], { term: 1, isLeader: true }), node('b', [], { term: 1 }), node('c', [], { term: 1 })] },
      {
        nodes: [
          node('a', [1, 1], { isLeader: true, commitIndex: 2 }),
          node('b', [1, 1], { commitIndex: 1 }),
          node('c', [1]),
        ],
      },
      {
        nodes: [
          node('a', [1, 1], { down: true }),
          node('b', [1, 1, 2], { term: 2, isLeader: true, commitIndex: 3 }),
          node('c', [1, 1, 2], { term: 2, commitIndex: 3 }),
        ],
      },
    ];
    for (const v of views) expect(reg.checkInvariants(v)).toEqual([]);
  });

  it('catch two leaders in one term, even at different times', () => {
    const reg = raftRegistry();
    expect(reg.checkInvariants({ nodes: [node('a', [], { term: 3, isLeader: true })] })).toEqual([]);
    const v = reg.checkInvariants({ nodes: [node('a', [], { term: 3 }), node('b', [], { term: 3, isLeader: true })] });
    expect(v.map((x) => x.invariant)).toEqual(['raft/election-safety']);
  });

  it('catch logs that match at an index but differ below it', () => {
    const reg = raftRegistry();
    const v = reg.checkInvariants({ nodes: [node('a', [1, 1, 3]), node('b', [1, 2, 3])] });
    expect(v.map((x) => x.invariant)).toEqual(['raft/log-matching']);
    // Divergent tails alone are fine.
    expect(raftRegistry().checkInvariants({ nodes: [node('a', [1, 1, 2]), node('b', [1, 1, 3])] })).toEqual([]);
  });

  it('catch a committed entry that changes, and different entries applied at one index', () => {
    const reg = raftRegistry();
    expect(reg.checkInvariants({ nodes: [node('a', [1, 1], { commitIndex: 2 })] })).toEqual([]);
    const v = reg.checkInvariants({ nodes: [node('b', [1, 2], { commitIndex: 2, term: 2 })] });
    expect(new Set(v.map((x) => x.invariant))).toEqual(new Set(['raft/state-machine-safety']));
  });

  it('catch a leader of a later term that lacks a committed entry', () => {
    const reg = raftRegistry();
    expect(reg.checkInvariants({ nodes: [node('a', [1, 1, 1], { term: 1, commitIndex: 3 })] })).toEqual([]);
    const v = reg.checkInvariants({
      nodes: [node('a', [1, 1, 1], { down: true }), node('c', [1, 1], { term: 2, isLeader: true })],
    });
    expect(v.map((x) => x.invariant)).toEqual(['raft/leader-completeness']);
  });
});
