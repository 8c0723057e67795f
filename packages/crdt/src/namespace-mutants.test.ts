/**
 * NamespaceReplica rules the mutation run (docs/simulation.md, "Mutation
 * testing (Stryker)") found unchecked: increments of a live counter in a full
 * namespace, merge's time guard, no change reported for a late older write,
 * no return of a state collected early on acknowledgements, a new
 * incarnation's base when the held state is newer than the collected floor,
 * and the tombstone count after collecting an expired entry.
 */
import { InvalidArgumentError, NamespaceFullError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { type CounterState, NamespaceReplica } from './index.js';

const T0 = 1_750_000_000_000;
const GRACE_MS = 2_000;

function replica(id: string, maxLiveKeys?: number): NamespaceReplica {
  return new NamespaceReplica({
    namespace: 'ns',
    replicaId: id,
    maxTtlSeconds: 2,
    defaultTtlSeconds: 1,
    tombstoneGraceMs: GRACE_MS,
    maxLiveKeys,
  });
}

describe('NamespaceReplica', () => {
  it('a full namespace still takes increments of a live counter', () => {
    const a = replica('a', 1);
    a.increment('c', 1, T0);
    a.increment('c', 2, T0 + 1);
    expect(a.get('c', T0 + 1)?.value).toBe(3);
    expect(() => a.increment('d', 1, T0 + 1)).toThrow(NamespaceFullError);
  });

  it('merge refuses a negative, fractional or non-finite time and changes nothing', () => {
    const a = replica('a');
    const b = replica('b');
    const d = a.set('k', 1, T0);
    for (const bad of [-1, T0 + 0.5, Number.NaN]) expect(() => b.merge(d, bad)).toThrow(InvalidArgumentError);
    expect(b.stats().states).toBe(0);
    // 0 is a time like any other (the state is then too far ahead, and refused as such)
    expect(b.merge(d, 0)).toEqual({ changedKeys: [], rejectedStates: 1 });
    expect(b.merge(d, T0).changedKeys).toEqual(['k']);
  });

  it('a late concurrent older write changes nothing and reports no change', () => {
    const a = replica('a');
    const b = replica('b');
    const older = b.set('k', 'old', T0);
    a.set('k', 'new', T0 + 10);
    expect(a.merge(older, T0 + 20)).toEqual({ changedKeys: [], rejectedStates: 0 });
    expect(a.get('k', T0 + 20)?.value).toBe('new');
  });

  it('a state collected early on every peer’s acknowledgement does not come back with a late duplicate', () => {
    const a = replica('a');
    const b = replica('b');
    const write = a.set('k', 'v', T0);
    const del = a.delete('k', T0 + 1);
    b.merge(write, T0 + 2);
    b.merge(del, T0 + 2);
    expect(a.gc(T0 + 3, { peers: [b.digest()] }).removed).toBe(1); // long before the grace period
    expect(a.merge(del, T0 + 4)).toEqual({ changedKeys: [], rejectedStates: 0 });
    expect(a.merge(write, T0 + 4)).toEqual({ changedKeys: [], rejectedStates: 0 });
    expect(a.stats()).toMatchObject({ states: 0, tombstones: 0 });
  });

  it('a new incarnation takes the held state as its base when it is newer than the collected floor', () => {
    const r = replica('r');
    const a = replica('a');
    r.merge(a.set('k', 'first', T0), T0);
    const t = T0 + GRACE_MS;
    expect(r.gc(t).removed).toBe(1); // floor: a's first write
    r.merge(a.set('k', 'second', t), t);
    const del = r.delete('k', t + 1); // held: r's tombstone, newer than the floor
    r.increment('k', 1, t + 2);
    const s = r.stateOf('k') as CounterState;
    expect([s.type, s.wallMs, s.logical, s.node]).toEqual(['counter', t + 1, 0, 'r']);
    // so the incarnation wins over the tombstone wherever that is held
    const other = replica('o');
    other.merge(del, t + 3);
    other.merge(r.state(), t + 3);
    expect(other.get('k', t + 3)?.value).toBe(1);
  });

  it('collecting an expired entry leaves the tombstone count alone', () => {
    const a = replica('a');
    a.set('k', 1, T0);
    a.delete('d', T0);
    expect(a.stats().tombstones).toBe(1);
    expect(a.gc(T0 + GRACE_MS).removed).toBe(2);
    expect(a.stats()).toMatchObject({ states: 0, tombstones: 0 });
    a.set('k', 1, T0 + GRACE_MS);
    expect(a.gc(T0 + 2 * GRACE_MS).removed).toBe(1);
    expect(a.stats()).toMatchObject({ states: 0, tombstones: 0 });
  });

  it('a copy of a live incarnation that is itself past its collection time still adds its shares', () => {
    const a = replica('a');
    const b = replica('b');
    const r = replica('r');
    const first = a.increment('k', 1, T0, { ttlSeconds: 1 });
    b.merge(first, T0 + 100);
    // b counts on the same incarnation; its copy (latest share at T0 + 500, TTL 1 s) reaches r late
    const late = b.increment('k', 10, T0 + 500, { ttlSeconds: 1 });
    a.increment('k', 1, T0 + 900, { ttlSeconds: 2 });
    r.merge(a.increment('k', 1, T0 + 2800, { ttlSeconds: 2 }), T0 + 2800); // live until T0 + 4800
    const t = T0 + 500 + 1000 + GRACE_MS + 100; // b's copy alone would be collected by now
    for (const x of [a, r]) {
      x.merge(late, t);
      expect(x.get('k', t)?.value).toBe(13);
    }
  });
});
