/**
 * Lock rules the mutation run over locks.ts (docs/simulation.md, "Mutation
 * testing (Stryker)") found unchecked: reads after a holder's TTL ran out,
 * lock_list's order, filter and truncation, a full namespace reclaiming
 * expired slots, renew and release by the wrong owner or fence, a malformed
 * fence, forgetting one slot of a namespace, and the expire command's due
 * time for a held slot.
 */
import { describe, expect, it } from 'vitest';
import { CoordHarness } from './harness.js';
import type { CoordLimits, Operation } from './types.js';

const NS = 'ns';

function harness(limits: Partial<CoordLimits> = {}): CoordHarness {
  return new CoordHarness({ limits });
}

function acquire(h: CoordHarness, key: string, owner: string, ttlSeconds = 10): number {
  const r = h.ok({ type: 'lock_acquire', namespace: NS, key, owner, ttlSeconds });
  if (r.type !== 'lock') throw new Error(`not granted: ${JSON.stringify(r)}`);
  return r.lock.fence;
}

function inspectHolder(h: CoordHarness, key: string, nowMs: number): string | null {
  const r = h.sm.query({ type: 'lock_inspect', namespace: NS, key }, nowMs);
  if (!r.ok || r.value.type !== 'lock_info') throw new Error(JSON.stringify(r));
  return r.value.lock.holder?.owner ?? null;
}

function list(h: CoordHarness, nowMs?: number): { keys: string[]; truncated: boolean } {
  const r = h.sm.query({ type: 'lock_list', namespace: NS }, nowMs);
  if (!r.ok || r.value.type !== 'lock_list') throw new Error(JSON.stringify(r));
  return { keys: r.value.locks.map((l) => l.key), truncated: r.value.truncated };
}

describe('lock reads', () => {
  it('inspect shows the holder until exactly its expiry, judged at read time without an expire command', () => {
    const h = harness();
    acquire(h, 'k', 'a', 10);
    expect(inspectHolder(h, 'k', h.nowMs + 9_999)).toBe('a');
    expect(inspectHolder(h, 'k', h.nowMs + 10_000)).toBe(null);
  });

  it('lock_list: key order, only held or contended slots, truncated only past the limit', () => {
    const h = harness({ maxListLimit: 2 });
    acquire(h, 'b', 'x');
    acquire(h, 'a', 'x');
    expect(list(h)).toEqual({ keys: ['a', 'b'], truncated: false });
    const fence = acquire(h, 'c', 'x');
    expect(list(h)).toEqual({ keys: ['a', 'b'], truncated: true });
    h.ok({ type: 'lock_release', namespace: NS, key: 'c', owner: 'x', fence });
    expect(list(h)).toEqual({ keys: ['a', 'b'], truncated: false });
  });

  it('lock_list keeps a slot whose holder has expired at read time while a waiter waits', () => {
    const h = harness();
    acquire(h, 'k', 'a', 10);
    const clientId = h.register();
    h.ok({ type: 'lock_acquire', namespace: NS, key: 'k', owner: 'b', waitSeconds: 60 }, { clientId, seq: 1 });
    expect(list(h, h.nowMs + 10_000).keys).toEqual(['k']);
  });
});

describe('lock writes', () => {
  it('a full namespace reclaims slots forgotten since, instead of refusing a new lock', () => {
    const h = harness({ maxLocksPerNamespace: 2, idleLockRetentionSeconds: 1 });
    acquire(h, 'a', 'x', 60);
    acquire(h, 'b', 'x', 1);
    expect(h.code({ type: 'lock_acquire', namespace: NS, key: 'c', owner: 'x' })).toBe('namespace_full');
    h.advance(3_000);
    expect(acquire(h, 'c', 'x')).toBeGreaterThan(0);
  });

  it('renew needs the holder’s own fence and owner (else lock_held); after a release it is lease_lost, never a throw', () => {
    const h = harness();
    const fence = acquire(h, 'k', 'a');
    expect(h.code({ type: 'lock_renew', namespace: NS, key: 'k', owner: 'a', fence: fence + 1 })).toBe('lock_held');
    expect(h.code({ type: 'lock_renew', namespace: NS, key: 'k', owner: 'b', fence })).toBe('lock_held');
    h.ok({ type: 'lock_release', namespace: NS, key: 'k', owner: 'a', fence });
    expect(h.code({ type: 'lock_renew', namespace: NS, key: 'k', owner: 'a', fence })).toBe('lease_lost');
  });

  it('a release by another owner with the right fence frees nothing', () => {
    const h = harness();
    const fence = acquire(h, 'k', 'a');
    expect(h.ok({ type: 'lock_release', namespace: NS, key: 'k', owner: 'b', fence })).toEqual({
      type: 'lock_released',
      released: false,
    });
    expect(inspectHolder(h, 'k', h.nowMs)).toBe('a');
  });

  it('a late release of an earlier holding by the same owner does not free its newer holding', () => {
    const h = harness();
    const old = acquire(h, 'k', 'a', 10);
    h.advance(10_000);
    const current = acquire(h, 'k', 'a', 10);
    expect(current).toBeGreaterThan(old);
    expect(h.ok({ type: 'lock_release', namespace: NS, key: 'k', owner: 'a', fence: old })).toEqual({
      type: 'lock_released',
      released: false,
    });
    expect(inspectHolder(h, 'k', h.nowMs)).toBe('a');
    expect(h.code({ type: 'lock_acquire', namespace: NS, key: 'k', owner: 'b' })).toBe('lock_held');
  });

  it('a fenced write with a fence that is not an object is invalid_argument, not a throw', () => {
    const h = harness();
    const op = { type: 'set', namespace: NS, key: 'e', value: 1, fence: null } as unknown as Operation;
    expect(h.code(op)).toBe('invalid_argument');
  });

  it('forgetting an idle slot keeps the other slots of its namespace', () => {
    const h = harness({ idleLockRetentionSeconds: 1 });
    const fence = acquire(h, 'idle', 'x', 60);
    h.ok({ type: 'lock_release', namespace: NS, key: 'idle', owner: 'x', fence });
    acquire(h, 'held', 'y', 60);
    h.advance(2_000);
    h.ok({ type: 'expire' });
    expect(inspectHolder(h, 'held', h.nowMs)).toBe('y');
    expect(list(h).keys).toEqual(['held']);
  });

  it('after a full expire scan, a held slot is due again at its holder’s expiry', () => {
    const h = harness();
    acquire(h, 'k', 'a', 10);
    const clientId = h.register();
    h.ok({ type: 'lock_acquire', namespace: NS, key: 'k', owner: 'b', waitSeconds: 60 }, { clientId, seq: 1 });
    h.ok({ type: 'set', namespace: NS, key: 'e', value: 1, ttlSeconds: 1 });
    h.advance(1_000);
    h.ok({ type: 'expire' }); // collects e: a full scan that recomputes every due time
    h.advance(9_000);
    const out = h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } });
    expect(
      out.deliveries.map((d) => d.result.ok && d.result.value.type === 'lock' && d.result.value.lock.owner),
    ).toEqual(['b']);
  });
});
