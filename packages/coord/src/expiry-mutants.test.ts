/**
 * The expire command and blocking lock waiters at their boundaries, found
 * unchecked by the mutation run (docs/simulation.md, "Mutation testing
 * (Stryker)"): a wait that ends exactly when the holder's TTL runs out, the
 * count of waiters an expire times out, and the key order of the deliveries.
 */
import { describe, expect, it } from 'vitest';
import { CoordHarness } from './harness.js';
import type { ApplyOutput } from './types.js';

function holdWithWaiter(h: CoordHarness, namespace: string, key: string, waitSeconds: number): void {
  h.ok({ type: 'lock_acquire', namespace, key, owner: 'holder', ttlSeconds: 30 });
  const clientId = h.register();
  const r = h.ok(
    { type: 'lock_acquire', namespace, key, owner: `waiter-${namespace}-${key}`, ttlSeconds: 30, waitSeconds },
    { clientId, seq: 1 },
  );
  expect(r.type).toBe('lock_waiting');
}

function expireNow(h: CoordHarness): ApplyOutput {
  return h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } });
}

/** Each delivery as `owner granted` or `error code`, in emission order. */
function deliveries(out: ApplyOutput): string[] {
  return out.deliveries.map((d) =>
    d.result.ok && d.result.value.type === 'lock'
      ? d.result.value.lock.owner
      : d.result.ok
        ? 'ok'
        : d.result.error.code,
  );
}

describe('expire and blocking lock waiters', () => {
  it('a waiter whose wait ends exactly when the holder expires is timed out, not granted', () => {
    const h = new CoordHarness();
    holdWithWaiter(h, 'ns', 'k', 30); // the wait ends at the holder's expiresAt
    h.advance(30_000);
    const out = expireNow(h);
    expect(out.result).toEqual({
      ok: true,
      value: { type: 'expired', entries: 0, locks: 1, waiters: 1, sessions: 0 },
    });
    expect(deliveries(out)).toEqual(['lock_held']);
    const info = h.sm.query({ type: 'lock_inspect', namespace: 'ns', key: 'k' });
    expect(info.ok && info.value.type === 'lock_info' && info.value.lock.holder).toBe(null);
  });

  it('counts only the waiters it times out, not those it grants', () => {
    const h = new CoordHarness();
    holdWithWaiter(h, 'ns', 'a', 60); // granted when the holder expires
    holdWithWaiter(h, 'ns', 'b', 30); // times out with the holder
    h.advance(30_000);
    const out = expireNow(h);
    expect(out.result).toEqual({
      ok: true,
      value: { type: 'expired', entries: 0, locks: 2, waiters: 1, sessions: 0 },
    });
    expect(deliveries(out)).toEqual(['waiter-ns-a', 'lock_held']);
  });

  it('delivers in namespace and key order, whatever order the slots were made in, like a restored replica', () => {
    const h = new CoordHarness();
    holdWithWaiter(h, 'zeta', 'b', 60);
    holdWithWaiter(h, 'zeta', 'a', 60);
    holdWithWaiter(h, 'alpha', 'b', 60);
    holdWithWaiter(h, 'alpha', 'a', 60);
    const copy = new CoordHarness();
    copy.sm.restore(h.sm.snapshot());
    copy.index = h.index;
    h.advance(30_000);
    copy.nowMs = h.nowMs;
    const order = ['waiter-alpha-a', 'waiter-alpha-b', 'waiter-zeta-a', 'waiter-zeta-b'];
    expect(deliveries(expireNow(h))).toEqual(order);
    expect(deliveries(expireNow(copy))).toEqual(order);
  });
});
