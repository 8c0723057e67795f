/**
 * A counter incarnation racing garbage collection (INTERNALS §4): once one
 * replica has collected a key and another still holds its old state, a new
 * incarnation started on the key must read the same everywhere. Reproduces
 * the race the simulator found (`crdt-gc`, seeds 100110, 100123, 100219: one
 * replica read 7, the others 0, with equal digests).
 */
import { describe, expect, it } from 'vitest';
import { type CounterState, type Entry, NamespaceReplica } from './index.js';

const T0 = 1_750_000_000_000;
/** Short TTLs, so the grace period (= the maximum TTL) passes within a test. */
const MAX_TTL_SECONDS = 2;
const GRACE_MS = 2_000;
const DRIFT_MS = 60_000;

function replica(id: string): NamespaceReplica {
  return new NamespaceReplica({
    namespace: 'ns',
    replicaId: id,
    maxTtlSeconds: MAX_TTL_SECONDS,
    defaultTtlSeconds: 1,
    tombstoneGraceMs: GRACE_MS,
    maxClockDriftMs: DRIFT_MS,
  });
}

/** What a reader sees: value and version (undefined when absent). */
function read(r: NamespaceReplica, key: string, nowMs: number): Pick<Entry, 'value' | 'version'> | undefined {
  const e = r.get(key, nowMs);
  return e && { value: e.value, version: e.version };
}

/** Full anti-entropy both ways between every pair, then the replicas must hold equal digests. */
function sync(replicas: NamespaceReplica[], nowMs: number): void {
  for (let round = 0; round < 2; round++) {
    for (const a of replicas) for (const b of replicas) if (a !== b) a.merge(b.deltaFor(a.digest()), nowMs);
  }
}

function expectSameReads(replicas: NamespaceReplica[], key: string, nowMs: number): void {
  const first = read(replicas[0] as NamespaceReplica, key, nowMs);
  for (const r of replicas)
    expect({ replica: r.replicaId, read: read(r, key, nowMs) }).toEqual({ replica: r.replicaId, read: first });
}

describe('counter incarnations racing garbage collection', () => {
  it('a new incarnation on a collected key does not join the old shares another replica still holds', () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    const r2 = replica('r2');
    // One incarnation, counted on r0 and r2, seen by everyone; it expires at T0 + 1 s.
    const a = r0.increment('c', 5, T0, { ttlSeconds: 1 });
    const b = r2.increment('c', 2, T0 + 10, { ttlSeconds: 1 });
    for (const r of [r0, r1, r2]) {
      r.merge(a, T0 + 20);
      r.merge(b, T0 + 20);
    }
    // A grace period after it expired, r1 and r2 collect it; r0's gc has not run yet.
    const t = T0 + 10 + 1_000 + GRACE_MS;
    expect(r1.gc(t).removed).toBe(1);
    expect(r2.gc(t).removed).toBe(1);
    expect(r0.stateOf('c')).toBeDefined();
    // r1 counts again: a new incarnation, at 1.
    const inc = r1.increment('c', 1, t + 100, { ttlSeconds: 2 });
    expect(r1.get('c', t + 100)?.value).toBe(1);
    for (const r of [r0, r2]) r.merge(inc, t + 200);
    sync([r0, r1, r2], t + 300);
    expect(r0.digest()).toEqual(r1.digest());
    expectSameReads([r0, r1, r2], 'c', t + 300);
    expect(r0.get('c', t + 300)?.value).toBe(1);
  });

  it('an incarnation started after an early collection beats the old one a peer still holds (collection floor)', () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    r1.merge(r0.increment('c', 7, T0, { ttlSeconds: 1 }), T0);
    // Expired, not yet past the grace period: only an acknowledged (early) collection removes it.
    const t = T0 + 1_500;
    expect(r1.gc(t, { peers: [r0.digest()] }).removed).toBe(1);
    r0.merge(r1.increment('c', 1, t, { ttlSeconds: 1 }), t);
    // r0 cannot collect its copy yet (the grace period has not passed), yet reads the new incarnation.
    expect(r0.gc(t).removed).toBe(0);
    expectSameReads([r0, r1], 'c', t);
    expect(r0.get('c', t)?.value).toBe(1);
  });

  it('a replica holding a tombstone past its grace period takes a counter started where it was collected (lazy collection)', () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    r1.merge(r0.increment('c', 3, T0, { ttlSeconds: 1 }), T0);
    r0.merge(r1.delete('c', T0 + 100), T0 + 100);
    const t = T0 + 100 + GRACE_MS;
    expect(r1.gc(t).removed).toBe(1);
    // r1 restarts from its encoded state: it no longer knows what it collected.
    const r1b = replica('r1');
    r1b.merge(r1.state(), t);
    const inc = r1b.increment('c', 4, t + 50, { ttlSeconds: 2 });
    // r0 still holds the tombstone (its gc has not run); merging, it collects it first.
    expect(r0.stateOf('c')?.type).toBe('tombstone');
    r0.merge(inc, t + 60);
    sync([r0, r1b], t + 70);
    expectSameReads([r0, r1b], 'c', t + 70);
    expect(r0.get('c', t + 70)?.value).toBe(4);
  });

  it('replicas that collected and replicas that still hold an expired counter start the same incarnation', () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    r1.merge(r0.increment('c', 5, T0, { ttlSeconds: 1 }), T0);
    const t = T0 + 1_000 + GRACE_MS;
    expect(r1.gc(t).removed).toBe(1);
    // Concurrent first increments on both sides of the collection count together.
    const d0 = r0.increment('c', 2, t + 10, { ttlSeconds: 2 });
    const d1 = r1.increment('c', 3, t + 10, { ttlSeconds: 2 });
    r0.merge(d1, t + 20);
    r1.merge(d0, t + 20);
    expectSameReads([r0, r1], 'c', t + 20);
    expect(r0.get('c', t + 20)?.value).toBe(5);
  });

  it('a late copy that is already collectable is recorded, not installed, and a counter starts above it', () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    const old = r0.increment('c', 5, T0, { ttlSeconds: 1 });
    const t = T0 + 1_000 + GRACE_MS;
    const result = r1.merge(old, t);
    expect(result.changedKeys).toEqual([]);
    expect(r1.stateOf('c')).toBeUndefined();
    expect(r1.digest()).toEqual(r0.digest());
    expect(r1.stats().collectedKeys).toBe(1);
    // r0 still holds the old incarnation; both start the same new one, above it.
    const d0 = r0.increment('c', 1, t + 10, { ttlSeconds: 1 });
    const d1 = r1.increment('c', 2, t + 10, { ttlSeconds: 1 });
    expect(r1.stateOf('c')).toMatchObject({ wallMs: T0, node: 'r0' });
    r0.merge(d1, t + 20);
    r1.merge(d0, t + 20);
    expectSameReads([r0, r1], 'c', t + 20);
    expect(r1.get('c', t + 20)?.value).toBe(3);
  });

  it('collects a counter only a grace period after it expired: an increment just before expiry still joins it everywhere', () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    const r2 = replica('r2');
    // r2 counts, r1 sees it, r0 (whose link from r2 is down) counts too; all with a 2 s TTL.
    const s2 = r2.increment('c', 2, T0, { ttlSeconds: 2 });
    r1.merge(s2, T0);
    const s0 = r0.increment('c', 5, T0, { ttlSeconds: 2 });
    r1.merge(s0, T0);
    r2.merge(s0, T0);
    // r0 counts again just before the counter expires; that increment reaches r1 late.
    const late = r0.increment('c', 1, T0 + 1_999, { ttlSeconds: 2 });
    r2.merge(late, T0 + 2_000);
    // Written 2 s ago, expired now: the grace period since its write has passed, but not since its expiry.
    expect(r1.gc(T0 + GRACE_MS + 1).removed).toBe(0);
    r1.merge(late, T0 + GRACE_MS + 100);
    sync([r0, r1, r2], T0 + GRACE_MS + 200);
    expectSameReads([r0, r1, r2], 'c', T0 + GRACE_MS + 200);
    expect(r1.get('c', T0 + GRACE_MS + 200)?.value).toBe(8);
  });

  it("an increment's delta carries the whole incarnation, so a replica that lacks it gets every share", () => {
    const r0 = replica('r0');
    const r1 = replica('r1');
    const r2 = replica('r2');
    r1.merge(r0.increment('c', 5, T0, { ttlSeconds: 2 }), T0);
    const d = r1.increment('c', 1, T0 + 10, { ttlSeconds: 2 });
    expect([...(d.states[0] as CounterState).shares.keys()]).toEqual(['r0', 'r1']);
    r2.merge(d, T0 + 20);
    expect(r2.get('c', T0 + 20)?.value).toBe(6);
  });

  it('forgets what it collected once every replica must have collected it too; a fresh key starts from zero', () => {
    const r0 = replica('r0');
    r0.increment('c', 5, T0, { ttlSeconds: 1 });
    const t = T0 + 1_000 + GRACE_MS;
    expect(r0.gc(t - 1).removed).toBe(0);
    expect(r0.gc(t).removed).toBe(1);
    expect(r0.stats().collectedKeys).toBe(1);
    // Within the drift bound after the grace period the floor is kept: the new incarnation sits above the old one.
    r0.increment('c', 1, t + 1, { ttlSeconds: 1 });
    expect(r0.stateOf('c')?.wallMs).toBe(T0);
    // That one is collected in turn; its floor goes once the drift bound has passed too.
    const later = t + 1 + 1_000 + GRACE_MS;
    expect(r0.gc(later).removed).toBe(1);
    expect(r0.gc(later + DRIFT_MS - 1).removed).toBe(0);
    expect(r0.stats().collectedKeys).toBe(1);
    expect(r0.gc(later + DRIFT_MS).removed).toBe(0);
    expect(r0.stats().collectedKeys).toBe(0);
    r0.increment('c', 1, later + DRIFT_MS, { ttlSeconds: 1 });
    expect(r0.stateOf('c')).toMatchObject({ wallMs: 0, logical: 0, node: '' });
  });
});
