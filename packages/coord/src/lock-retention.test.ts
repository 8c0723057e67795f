/**
 * Lock slots in time: a free slot is forgotten exactly when the idle
 * retention has passed, never while it is held, and the expire command
 * collects an entry at exactly its expiresAt.
 */
import { describe, expect, it } from 'vitest';
import { CoordHarness } from './harness.js';

const NS = 'deploy';
const RETENTION_S = 60;

function harness(): CoordHarness {
  return new CoordHarness({ limits: { idleLockRetentionSeconds: RETENTION_S } });
}

function lastFence(h: CoordHarness): number {
  const r = h.sm.query({ type: 'lock_inspect', namespace: NS, key: 'k' });
  if (!r.ok || r.value.type !== 'lock_info') throw new Error(`lock_inspect failed: ${JSON.stringify(r)}`);
  return r.value.lock.lastFence;
}

function acquire(h: CoordHarness, owner: string): number {
  const r = h.ok({ type: 'lock_acquire', namespace: NS, key: 'k', owner, ttlSeconds: 30 });
  if (r.type !== 'lock') throw new Error(`not granted: ${JSON.stringify(r)}`);
  return r.lock.fence;
}

describe('lock slot retention', () => {
  it('a lock renewed long past the idle retention stays held: only free slots are forgotten', () => {
    const h = harness();
    const fence = acquire(h, 'a');
    for (let t = 0; t < 5 * RETENTION_S; t += 20) {
      h.advance(20_000);
      h.ok({ type: 'expire' });
      h.ok({ type: 'lock_renew', namespace: NS, key: 'k', owner: 'a', fence });
    }
    expect(h.code({ type: 'lock_acquire', namespace: NS, key: 'k', owner: 'b', ttlSeconds: 30 })).toBe('lock_held');
    expect(lastFence(h)).toBe(fence);
  });

  it('a released slot keeps its last fence until exactly the retention has passed, then is forgotten', () => {
    const h = harness();
    const fence = acquire(h, 'a');
    h.advance(1_000);
    h.ok({ type: 'lock_release', namespace: NS, key: 'k', owner: 'a', fence });
    h.advance(RETENTION_S * 1000 - 1);
    h.ok({ type: 'expire' });
    expect(lastFence(h)).toBe(fence);
    h.advance(1);
    h.ok({ type: 'expire' });
    expect(lastFence(h)).toBe(0);
    // Forgetting the slot does not reuse fences: the next grant is above the log index.
    expect(acquire(h, 'b')).toBeGreaterThan(fence);
  });
});

describe('expire', () => {
  it('collects an entry at exactly its expiresAt', () => {
    const h = harness();
    h.ok({ type: 'set', namespace: NS, key: 'e', value: 1, ttlSeconds: 10 });
    h.advance(9_999);
    expect(h.ok({ type: 'expire' })).toMatchObject({ type: 'expired', entries: 0 });
    h.advance(1);
    expect(h.ok({ type: 'expire' })).toMatchObject({ type: 'expired', entries: 1 });
  });
});
