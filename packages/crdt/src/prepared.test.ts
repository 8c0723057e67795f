/**
 * Prepared local writes (persist first, then apply): a prepared write is
 * invisible until applied, the applied result equals the same writes done
 * directly, and a discarded one leaves no trace but its spent sequence number.
 */
import { testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Delta, encodeDelta, encodeState, type JsonValue, NamespaceReplica } from './index.js';

const SEED = testSeed(20_261_201);
const NS = 'prep';
const T0 = Date.UTC(2026, 0, 1);

function replica(id = 'a', extra: Partial<ConstructorParameters<typeof NamespaceReplica>[0]> = {}): NamespaceReplica {
  return new NamespaceReplica({ namespace: NS, replicaId: id, ...extra });
}

const seen = (r: NamespaceReplica) => encodeState(r.state());

describe('prepared local writes', () => {
  it('change nothing a reader or a peer sees until applied', () => {
    const a = replica();
    a.set('k', 1, T0);
    const before = seen(a);
    const digest = a.digest();
    const d = a.prepareSet('k', 2, T0 + 1);
    a.prepareIncrement('n', 5, T0 + 1);
    a.prepareDelete('gone', T0 + 1);
    expect(a.get('k', T0 + 1)?.value).toBe(1);
    expect(a.get('n', T0 + 1)).toBeUndefined();
    expect(seen(a)).toEqual(before);
    expect(a.digest()).toEqual(digest);
    expect(a.deltaFor({ namespace: NS, context: new Map() }).states.map((s) => s.key)).toEqual(['k']);
    expect(a.preparedCount).toBe(3);
    expect(a.applyPrepared(d, T0 + 2)).toBe(true);
    expect(a.get('k', T0 + 2)?.value).toBe(2);
    expect(a.preparedCount).toBe(2);
  });

  it('a later write of the same key builds on the prepared one: two increments count twice', () => {
    const a = replica();
    const d1 = a.prepareIncrement('n', 1, T0);
    const d2 = a.prepareIncrement('n', 1, T0);
    expect(() => a.prepareIncrement('s', 1, T0)).not.toThrow();
    a.prepareSet('r', 'x', T0);
    expect(() => a.prepareIncrement('r', 1, T0)).toThrow(/register/);
    a.applyPrepared(d1, T0);
    a.applyPrepared(d2, T0);
    expect(a.get('n', T0)?.value).toBe(2);
    // A peer receiving both deltas, in either order, agrees.
    for (const order of [
      [d1, d2],
      [d2, d1],
    ]) {
      const b = replica('b');
      for (const d of order) b.merge(d, T0);
      expect(b.get('n', T0)?.value).toBe(2);
    }
  });

  it('discarded writes leave the state as it was; their sequence numbers stay spent', () => {
    const a = replica();
    const kept = a.increment('n', 10, T0);
    const before = seen(a);
    const lost = a.prepareIncrement('n', 1, T0 + 1);
    a.prepareSet('k', 'v', T0 + 1);
    a.discardPrepared();
    expect(seen(a)).toEqual(before);
    expect(a.preparedCount).toBe(0);
    expect(() => a.applyPrepared(lost, T0 + 2)).toThrow(/prepared/);
    const next = a.prepareIncrement('n', 1, T0 + 2);
    a.applyPrepared(next, T0 + 2);
    expect(a.get('n', T0 + 2)?.value).toBe(11); // the discarded increment is not in it
    const seqOf = (d: Delta) => {
      const s = d.states[0];
      return s?.type === 'counter' ? (s.shares.get('a')?.seq ?? 0) : 0;
    };
    expect(seqOf(next)).toBeGreaterThan(seqOf(lost));
    expect(seqOf(lost)).toBeGreaterThan(seqOf(kept));
  });

  it('count prepared new keys against the live-key limit', () => {
    const a = replica('a', { maxLiveKeys: 2 });
    a.prepareSet('x', 1, T0);
    a.prepareSet('y', 1, T0);
    expect(() => a.prepareSet('z', 1, T0)).toThrow(expect.objectContaining({ code: 'namespace_full' }));
    expect(() => a.prepareSet('x', 2, T0)).not.toThrow(); // overwriting a prepared key is fine
    a.discardPrepared();
    expect(() => a.prepareSet('z', 1, T0)).not.toThrow();
  });

  it('refuse a delta that is not an outstanding prepared write', () => {
    const a = replica();
    const direct = a.set('k', 1, T0);
    expect(() => a.applyPrepared(direct, T0)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    const d = a.prepareSet('k', 2, T0);
    a.applyPrepared(d, T0);
    expect(() => a.applyPrepared(d, T0)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  type Op =
    | { type: 'set'; key: string; value: JsonValue }
    | { type: 'inc'; key: string; by: number }
    | { type: 'del'; key: string }
    | { type: 'remote'; key: string; value: JsonValue }
    | { type: 'flush' };
  const key = fc.constantFrom('a', 'b', 'c');
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ type: fc.constant('set' as const), key, value: fc.integer({ min: 0, max: 9 }) }),
    fc.record({ type: fc.constant('inc' as const), key, by: fc.integer({ min: -3, max: 3 }) }),
    fc.record({ type: fc.constant('del' as const), key }),
    fc.record({ type: fc.constant('remote' as const), key, value: fc.integer({ min: 0, max: 9 }) }),
    fc.record({ type: fc.constant('flush' as const) }),
  );

  it('applied in batches, in order, they give exactly the state of the same writes done directly', () => {
    withSeed(SEED, (seed) =>
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
          const direct = replica();
          const staged = replica();
          const peer = replica('p');
          const outcome = (fn: () => unknown) => {
            try {
              fn();
              return 'ok';
            } catch (err) {
              return (err as { code?: string }).code ?? 'error';
            }
          };
          let queue: Delta[] = [];
          let now = T0;
          for (const op of ops) {
            now += 1;
            if (op.type === 'flush') {
              for (const d of queue) staged.applyPrepared(d, now);
              queue = [];
              continue;
            }
            if (op.type === 'remote') {
              const d = peer.set(op.key, op.value, now);
              direct.merge(d, now);
              staged.merge(d, now);
              continue;
            }
            const run = (r: NamespaceReplica, prepared: boolean): Delta => {
              if (op.type === 'set')
                return prepared ? r.prepareSet(op.key, op.value, now) : r.set(op.key, op.value, now);
              if (op.type === 'inc')
                return prepared ? r.prepareIncrement(op.key, op.by, now) : r.increment(op.key, op.by, now);
              return prepared ? r.prepareDelete(op.key, now) : r.delete(op.key, now);
            };
            let a: Delta | undefined;
            let b: Delta | undefined;
            const ra = outcome(() => {
              a = run(direct, false);
            });
            const rb = outcome(() => {
              b = run(staged, true);
            });
            expect(rb).toBe(ra);
            if (a && b) {
              expect(encodeDelta(b)).toEqual(encodeDelta(a));
              queue.push(b);
            }
          }
          for (const d of queue) staged.applyPrepared(d, now);
          expect(seen(staged)).toEqual(seen(direct));
          expect(staged.preparedCount).toBe(0);
        }),
        { numRuns: 300, seed },
      ),
    );
  });
});
