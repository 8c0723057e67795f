/**
 * Floors of collected keys (INTERNALS §4) at their edges, found unchecked by
 * the mutation run (docs/simulation.md, "Mutation testing (Stryker)"): a late
 * older state collected on arrival never lowers the floor, and a floor serves
 * as a new incarnation's base exactly until every replica must have collected
 * its state (its grace period plus the drift bound), not a millisecond longer.
 */
import { describe, expect, it } from 'vitest';
import { type CounterState, NamespaceReplica } from './index.js';

const T0 = 1_750_000_000_000;
const GRACE_MS = 2_000;
const DRIFT_MS = 60_000;

function replica(id: string): NamespaceReplica {
  return new NamespaceReplica({
    namespace: 'ns',
    replicaId: id,
    maxTtlSeconds: 2,
    defaultTtlSeconds: 1,
    tombstoneGraceMs: GRACE_MS,
    maxClockDriftMs: DRIFT_MS,
  });
}

function birth(r: NamespaceReplica, key: string): [number, number, string] {
  const s = r.stateOf(key) as CounterState;
  expect(s.type).toBe('counter');
  return [s.wallMs, s.logical, s.node];
}

/** r holds and then collects a's write of `k` at T0 + 10; returns the time it collected it. */
function collectNewer(r: NamespaceReplica): number {
  const a = replica('a');
  r.merge(a.set('k', 'new', T0 + 10), T0 + 20);
  const t = T0 + 10 + GRACE_MS;
  expect(r.gc(t).removed).toBe(1);
  return t;
}

describe('collected floors', () => {
  it('a late older state, collected on arrival, does not lower the floor', () => {
    const r = replica('r');
    const older = replica('b').set('k', 'old', T0); // concurrent with a's write, never seen by a
    const t = collectNewer(r);
    expect(r.merge(older, t).changedKeys).toEqual([]);
    r.increment('k', 1, t);
    expect(birth(r, 'k')).toEqual([T0 + 10, 0, 'a']);
  });

  it('serves as the base until the grace period plus the drift bound has passed, then the zero stamp does', () => {
    const until = T0 + 10 + GRACE_MS + DRIFT_MS;
    const before = replica('r');
    collectNewer(before);
    before.increment('k', 1, until - 1);
    expect(birth(before, 'k')).toEqual([T0 + 10, 0, 'a']);
    const after = replica('r');
    collectNewer(after);
    after.increment('k', 1, until);
    expect(birth(after, 'k')).toEqual([0, 0, '']);
  });
});
