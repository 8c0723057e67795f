import { type Delta, NamespaceReplica } from '@parley/crdt';
import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';
import { DeliveryBoundTracker, rangesHave, trackReplica } from './delivery-bound.js';

const GRACE = 2_000;
const T0 = 1_000_000;

function replica(id: string): NamespaceReplica {
  return new NamespaceReplica({
    namespace: 'ns',
    replicaId: id,
    defaultTtlSeconds: 1,
    maxTtlSeconds: 2,
    tombstoneGraceMs: GRACE,
  });
}

/**
 * a, b and c share counter c0; a deletes it; b increments it at `incAt`
 * (having seen the delete or not); the increment reaches a at once and c at
 * `arriveAt`, c having received the delete and collected it when due.
 */
function run(opts: { bSawDelete: boolean; incAt: number; arriveAt: number }) {
  const [a, b, c] = [replica('a'), replica('b'), replica('c')];
  const bound = new DeliveryBoundTracker(GRACE, ['a', 'b', 'c']);
  const merge = (r: NamespaceReplica, d: Delta, now: number) => {
    r.merge(d, now);
    bound.observe(trackReplica(r), now);
  };
  const noteInc = (r: NamespaceReplica, d: Delta) => {
    const st = d.states.find((s) => s.key === 'c0')!;
    if (st.type !== 'counter') throw new Error('not a counter');
    const share = st.shares.get(r.replicaId)!;
    bound.noteIncrement('c0', st, { node: r.replicaId, seq: share.seq }, share.wallMs, trackReplica(r));
  };
  const first = a.increment('c0', 1, T0, { ttlSeconds: 2 });
  noteInc(a, first);
  merge(b, first, T0 + 5);
  merge(c, first, T0 + 5);
  const del = a.delete('c0', T0 + 10);
  const tomb = del.states[0]!;
  if (tomb.type !== 'tombstone') throw new Error('not a tombstone');
  bound.noteDelete('c0', tomb, { node: tomb.node, seq: tomb.seq });
  merge(c, del, T0 + 20);
  if (opts.bSawDelete) merge(b, del, T0 + 20);
  const inc = b.increment('c0', 5, opts.incAt, { ttlSeconds: 2 });
  noteInc(b, inc);
  merge(a, inc, opts.incAt + 1);
  c.gc(opts.arriveAt - 1);
  merge(c, inc, opts.arriveAt);
  const now = opts.arriveAt;
  return { a, b, c, bound, now };
}

describe('DeliveryBoundTracker', () => {
  it('explains the divergence of an increment that missed a delete and arrived after its grace period', () => {
    const { a, c, bound, now } = run({ bSawDelete: false, incAt: T0 + 1_500, arriveAt: T0 + 10 + GRACE + 200 });
    // The crdt's stated limit: a hides the increment behind the tombstone, c had collected it.
    expect(a.get('c0', now)).toBeUndefined();
    expect(c.get('c0', now)?.value).toBe(6);
    expect(bound.unawareIncrements).toBe(1);
    expect(bound.crossings).toBe(1);
    expect(bound.explains('c0', trackReplica(a), trackReplica(c))).toBe(true);
    expect(bound.explains('c0', trackReplica(c), trackReplica(a))).toBe(true);
    expect(bound.explains('k0', trackReplica(a), trackReplica(c))).toBe(false);
  });

  it('does not excuse an increment that arrived before the delete could be collected', () => {
    const { bound, a, c } = run({ bSawDelete: false, incAt: T0 + 1_500, arriveAt: T0 + 10 + GRACE - 100 });
    expect(bound.unawareIncrements).toBe(1);
    expect(bound.crossings).toBe(0);
    expect(bound.explains('c0', trackReplica(a), trackReplica(c))).toBe(false);
  });

  it('does not excuse an increment whose writer had seen the delete', () => {
    const { bound, a, c } = run({ bSawDelete: true, incAt: T0 + 1_500, arriveAt: T0 + 10 + GRACE + 200 });
    expect(bound.unawareIncrements).toBe(0);
    expect(bound.crossings).toBe(0);
    expect(bound.explains('c0', trackReplica(a), trackReplica(c))).toBe(false);
  });

  it('does not excuse a pair where the replica without the counter never saw the delete', () => {
    const { bound, c, now } = run({ bSawDelete: false, incAt: T0 + 1_500, arriveAt: T0 + 10 + GRACE + 200 });
    const d = replica('d'); // saw neither the delete nor the increment
    expect(c.get('c0', now)).toBeDefined();
    expect(bound.explains('c0', trackReplica(d), trackReplica(c))).toBe(false);
  });

  it('bounds what it follows', () => {
    const bound = new DeliveryBoundTracker(GRACE, ['a', 'b'], 3);
    const b = replica('b');
    for (let i = 0; i < 10; i++)
      bound.noteDelete('c0', { wallMs: T0 + 10 * i + 5, logical: 0, node: 'a' }, { node: 'a', seq: i + 1 });
    for (let i = 0; i < 10; i++) {
      bound.noteIncrement(
        'c0',
        { wallMs: T0, logical: 0, node: 'b' },
        { node: 'b', seq: i + 1 },
        T0 + i,
        trackReplica(b),
      );
    }
    // The oldest writes and unaware increments are dropped: at most 3 of each are followed.
    const inner = bound as unknown as { unaware: unknown[]; writes: Map<string, unknown[]> };
    expect(bound.unawareIncrements).toBe(3);
    expect(inner.unaware.length).toBe(3);
    expect(inner.writes.get('c0')?.length).toBe(3);
  });
});

describe('rangesHave', () => {
  it('finds a dot in flat sorted ranges', () => {
    const ranges = new Map([['n', [1, 3, 7, 7, 10, 12]]]);
    expect([0, 1, 3, 4, 7, 8, 10, 12, 13].map((s) => rangesHave(ranges, 'n', s))).toEqual([
      false,
      true,
      true,
      false,
      true,
      false,
      true,
      true,
      false,
    ]);
    expect(rangesHave(ranges, 'm', 1)).toBe(false);
  });
});

describe('crdt-gc beyond the delivery bound', () => {
  // The seeds of the 1,000-seed sweeps whose counters diverged on one replica only
  // (docs/simulation.md): each is an increment that crossed the bound, and passes
  // because of it; every other key of those runs is still judged.
  for (const seed of [300011, 300248, 300633]) {
    it(`seed ${seed}: the divergence is the stated limit, counted, not a violation`, async () => {
      const { summary, perScenario } = await runSweep({
        scenarios: matchScenarios('crdt-gc'),
        firstSeed: seed,
        seeds: 1,
      });
      expect(summary.failures.map((f) => f.message)).toEqual([]);
      expect(perScenario[0]!.metrics.divergedBeyondBound).toBe(1);
      expect(perScenario[0]!.metrics.deliveryBoundCrossings).toBeGreaterThan(0);
    });
  }
});
