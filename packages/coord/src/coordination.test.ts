import { describe, expect, it } from 'vitest';
import { CoordHarness } from './harness.js';
import type { LeaseView, LockGrant, OpResult } from './types.js';

const NS = 'jobs';

function lease(r: OpResult): LeaseView {
  if (r.type !== 'lease') throw new Error(`not a lease: ${r.type}`);
  return r.lease;
}

function grant(r: OpResult): LockGrant {
  if (r.type !== 'lock') throw new Error(`not a lock grant: ${r.type}`);
  return r.lock;
}

describe('claim', () => {
  it('has exactly one winner; losers get the winner value; claims are immutable', () => {
    const h = new CoordHarness();
    const key = 'dispatch/etl:2026-08-09';
    const won = h.ok({ type: 'claim', namespace: NS, key, value: { runId: 'a' } });
    const lost = h.ok({ type: 'claim', namespace: NS, key, value: { runId: 'b' } });
    expect(won).toMatchObject({ type: 'claim', won: true, value: { runId: 'a' } });
    expect(lost).toMatchObject({ type: 'claim', won: false, value: { runId: 'a' } });
    if (won.type !== 'claim' || lost.type !== 'claim') return;
    expect(lost.version).toBe(won.version);
    expect(won.entry.kind).toBe('claim');
    expect(won.entry.ttlSeconds).toBe(30 * 86_400);
    expect(h.code({ type: 'set', namespace: NS, key, value: 1 })).toBe('key_already_exists');
    expect(h.code({ type: 'set', namespace: NS, key, value: 1, ifVersion: won.version })).toBe('key_already_exists');
    expect(h.code({ type: 'delete', namespace: NS, key })).toBe('invalid_argument');
    expect(h.ok({ type: 'get', namespace: NS, key })).toMatchObject({ entry: { value: { runId: 'a' } } });
  });

  it('a claim on an existing plain entry loses to it', () => {
    const h = new CoordHarness();
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 'first' });
    expect(h.ok({ type: 'claim', namespace: NS, key: 'k', value: 'second' })).toMatchObject({
      won: false,
      value: 'first',
    });
  });

  it('honours an explicit TTL and validates the value', () => {
    const h = new CoordHarness({ limits: { maxValueBytes: 10 } });
    expect(h.code({ type: 'claim', namespace: NS, key: 'k', value: 'x'.repeat(20) })).toBe('value_too_large');
    h.ok({ type: 'claim', namespace: NS, key: 'k', value: 1, ttlSeconds: 5 });
    h.advance(5000);
    expect(h.ok({ type: 'claim', namespace: NS, key: 'k', value: 2 })).toMatchObject({ won: true, value: 2 });
  });
});

describe('lease', () => {
  const acquire = (holder: string, extra: Record<string, unknown> = {}) =>
    ({ type: 'lease_acquire', namespace: NS, key: 'run-1', holder, ttlSeconds: 10, ...extra }) as const;

  it('acquires with an epoch, refuses a second holder while live, steals once expired', () => {
    const h = new CoordHarness();
    const a = lease(h.ok(acquire('w1')));
    expect(a).toMatchObject({ holder: 'w1', state: null, deadlineAt: h.nowMs + 10_000 });
    expect(a.epoch).toBeGreaterThan(0);
    const r = h.run(acquire('w2'));
    expect(!r.ok && r.error.code).toBe('lock_held');
    h.advance(10_000);
    expect(h.code(acquire('w2', { stealIfExpired: false }))).toBe('lock_held');
    const b = lease(h.ok(acquire('w2')));
    expect(b.epoch).toBeGreaterThan(a.epoch);
    expect(
      h.code({ type: 'lease_renew', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, ttlSeconds: 10 }),
    ).toBe('lease_lost');
  });

  it('bumps the epoch on every acquisition, also by the same holder and after release', () => {
    const h = new CoordHarness();
    const epochs: number[] = [];
    const a = lease(h.ok(acquire('w1')));
    epochs.push(a.epoch);
    epochs.push(lease(h.ok(acquire('w1'))).epoch);
    const c = lease(h.ok(acquire('w1')));
    h.ok({ type: 'lease_release', namespace: NS, key: 'run-1', holder: 'w1', epoch: c.epoch });
    epochs.push(c.epoch);
    epochs.push(lease(h.ok(acquire('w3'))).epoch);
    for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThan(epochs[i - 1] as number);
    // The old period is fenced even though the holder string is the same.
    expect(h.code({ type: 'lease_write', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, state: 1 })).toBe(
      'lease_lost',
    );
  });

  it('keeps epochs increasing after the document itself expired and vanished', () => {
    const h = new CoordHarness({ limits: { leaseRetentionSeconds: 1 } });
    const a = lease(h.ok(acquire('w1')));
    h.advance(20_000);
    h.ok({ type: 'expire' });
    expect(h.code({ type: 'get', namespace: NS, key: 'run-1' })).toBe('key_not_found');
    expect(lease(h.ok(acquire('w2'))).epoch).toBeGreaterThan(a.epoch);
  });

  it('renews, writes, guards writes on the state version, and releases', () => {
    const h = new CoordHarness();
    const a = lease(h.ok(acquire('w1')));
    h.advance(5000);
    const renewed = lease(
      h.ok({ type: 'lease_renew', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, ttlSeconds: 20 }),
    );
    expect(renewed.deadlineAt).toBe(h.nowMs + 20_000);
    expect(renewed.epoch).toBe(a.epoch);
    const w = lease(
      h.ok({ type: 'lease_write', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, state: { p: 0.5 } }),
    );
    expect(w.state).toEqual({ p: 0.5 });
    expect(w.deadlineAt).toBe(renewed.deadlineAt);
    const stale = h.run({
      type: 'lease_write',
      namespace: NS,
      key: 'run-1',
      holder: 'w1',
      epoch: a.epoch,
      state: { p: 0.9 },
      ifVersion: renewed.version,
    });
    expect(!stale.ok && stale.error.code).toBe('version_mismatch');
    const rel = lease(
      h.ok({ type: 'lease_release', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, state: { done: true } }),
    );
    expect(rel).toMatchObject({ holder: null, state: { done: true }, epoch: a.epoch });
    expect(
      h.code({ type: 'lease_renew', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, ttlSeconds: 10 }),
    ).toBe('lease_lost');
    // The document stays readable.
    expect(h.ok({ type: 'get', namespace: NS, key: 'run-1' })).toMatchObject({
      entry: { kind: 'lease', value: { holder: null, state: { done: true } } },
    });
  });

  it('lets an overrunning holder keep writing while nobody stole the lease', () => {
    const h = new CoordHarness();
    const a = lease(h.ok(acquire('w1')));
    h.advance(60_000);
    h.ok({ type: 'expire' });
    h.ok({ type: 'lease_write', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, state: 'late' });
  });

  it('acquires with a guarded state transition', () => {
    const h = new CoordHarness();
    const a = lease(h.ok(acquire('w1', { state: { status: 'running' }, ifNotExists: true })));
    expect(a.state).toEqual({ status: 'running' });
    h.ok({ type: 'lease_release', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch });
    expect(h.code(acquire('w2', { state: { status: 'x' }, ifNotExists: true }))).toBe('key_already_exists');
    expect(h.code(acquire('w2', { state: { status: 'x' }, ifVersion: a.version }))).toBe('version_mismatch');
    const current = h.ok({ type: 'get', namespace: NS, key: 'run-1' });
    const version = current.type === 'got' ? current.entry.version : '';
    const b = lease(h.ok(acquire('w2', { state: { status: 'again' }, ifVersion: version })));
    expect(b).toMatchObject({ holder: 'w2', state: { status: 'again' } });
    // Without state the current state is kept.
    h.advance(20_000);
    expect(lease(h.ok(acquire('w3'))).state).toEqual({ status: 'again' });
  });

  it('cooperative writes keep epoch, holder and deadline', () => {
    const h = new CoordHarness();
    const a = lease(h.ok(acquire('w1', { state: { n: 1 } })));
    h.advance(1000);
    const c = lease(
      h.ok({ type: 'lease_cooperative_write', namespace: NS, key: 'run-1', state: { n: 1, cancel: true } }),
    );
    expect(c).toMatchObject({ epoch: a.epoch, holder: 'w1', deadlineAt: a.deadlineAt, state: { n: 1, cancel: true } });
    expect(c.version).not.toBe(a.version);
    expect(
      h.code({
        type: 'lease_cooperative_write',
        namespace: NS,
        key: 'run-1',
        state: {},
        ifVersion: a.version,
      }),
    ).toBe('version_mismatch');
    // The holder's guarded write from the old version fails; after a renew it sees the new state.
    expect(
      h.code({
        type: 'lease_write',
        namespace: NS,
        key: 'run-1',
        holder: 'w1',
        epoch: a.epoch,
        state: { n: 2 },
        ifVersion: a.version,
      }),
    ).toBe('version_mismatch');
    const r = lease(
      h.ok({ type: 'lease_renew', namespace: NS, key: 'run-1', holder: 'w1', epoch: a.epoch, ttlSeconds: 10 }),
    );
    expect(r.state).toEqual({ n: 1, cancel: true });
    // A cooperative write can create the document with no holder.
    const fresh = lease(
      h.ok({
        type: 'lease_cooperative_write',
        namespace: NS,
        key: 'other',
        state: { cancel: true },
        ifNotExists: true,
      }),
    );
    expect(fresh).toMatchObject({ holder: null, epoch: 0 });
    expect(lease(h.ok({ ...acquire('w9'), key: 'other' })).state).toEqual({ cancel: true });
  });

  it('attach re-enters a live period of the same holder without a bump, never an expired one', () => {
    const h = new CoordHarness();
    const a = lease(h.ok(acquire('w1')));
    const attached = h.ok({ type: 'lease_attach', namespace: NS, key: 'run-1', holder: 'w1' });
    expect(lease(attached)).toEqual(a);
    expect(h.ok({ type: 'lease_attach', namespace: NS, key: 'run-1', holder: 'w2' })).toEqual({ type: 'lease_absent' });
    expect(h.ok({ type: 'lease_attach', namespace: NS, key: 'none', holder: 'w1' })).toEqual({ type: 'lease_absent' });
    h.advance(10_000);
    expect(h.ok({ type: 'lease_attach', namespace: NS, key: 'run-1', holder: 'w1' })).toEqual({ type: 'lease_absent' });
    expect(
      h.sm.query({ type: 'lease_attach', namespace: NS, key: 'run-1', holder: 'w1' }, h.nowMs - 5000),
    ).toMatchObject({ ok: true, value: { type: 'lease_absent' } });
  });

  it('keeps plain operations off lease documents and lease operations off plain entries', () => {
    const h = new CoordHarness();
    h.ok(acquire('w1'));
    expect(h.code({ type: 'set', namespace: NS, key: 'run-1', value: 1 })).toBe('invalid_argument');
    h.ok({ type: 'set', namespace: NS, key: 'plain', value: 1 });
    expect(h.code({ ...acquire('w1'), key: 'plain' })).toBe('invalid_argument');
    expect(h.code({ type: 'lease_cooperative_write', namespace: NS, key: 'plain', state: 1 })).toBe('invalid_argument');
    // A deleted lease document fences its holder.
    const a = h.ok({ type: 'get', namespace: NS, key: 'run-1' });
    h.ok({ type: 'delete', namespace: NS, key: 'run-1' });
    const epoch = a.type === 'got' ? (a.entry.value as { epoch: number }).epoch : 0;
    expect(h.code({ type: 'lease_write', namespace: NS, key: 'run-1', holder: 'w1', epoch, state: 1 })).toBe(
      'lease_lost',
    );
  });

  it('validates lease arguments', () => {
    const h = new CoordHarness();
    expect(h.code({ ...acquire('w1'), ttlSeconds: 0 })).toBe('invalid_argument');
    expect(h.code({ ...acquire(''), ttlSeconds: 5 })).toBe('invalid_argument');
    expect(h.code({ ...acquire('w1'), state: 'x'.repeat(2_000_000) })).toBe('value_too_large');
    expect(h.code({ type: 'get', namespace: NS, key: 'run-1' })).toBe('key_not_found');
  });
});

describe('locks', () => {
  const acquire = (owner: string, extra: Record<string, unknown> = {}) =>
    ({ type: 'lock_acquire', namespace: 'deploy', key: 'rollout', owner, ttlSeconds: 30, ...extra }) as const;

  it('grants with a fence, refuses others, releases only by owner and fence', () => {
    const h = new CoordHarness();
    const g = grant(h.ok(acquire('w1', { metadata: { host: 'a' } })));
    expect(g).toMatchObject({ owner: 'w1', expiresAt: h.nowMs + 30_000, metadata: { host: 'a' } });
    const held = h.run(acquire('w2'));
    expect(!held.ok && held.error).toMatchObject({ code: 'lock_held', details: { owner: 'w1' } });
    expect(h.ok({ type: 'lock_release', namespace: 'deploy', key: 'rollout', owner: 'w2', fence: g.fence })).toEqual({
      type: 'lock_released',
      released: false,
    });
    expect(h.ok({ type: 'lock_release', namespace: 'deploy', key: 'rollout', owner: 'w1', fence: g.fence })).toEqual({
      type: 'lock_released',
      released: true,
    });
    const g2 = grant(h.ok(acquire('w2')));
    expect(g2.fence).toBeGreaterThan(g.fence);
    // A retried release of the first holder never frees the newer one.
    expect(h.ok({ type: 'lock_release', namespace: 'deploy', key: 'rollout', owner: 'w1', fence: g.fence })).toEqual({
      type: 'lock_released',
      released: false,
    });
    expect(h.ok({ type: 'lock_inspect', namespace: 'deploy', key: 'rollout' })).toMatchObject({
      lock: { holder: { owner: 'w2', fence: g2.fence } },
    });
  });

  it('is not re-entrant', () => {
    const h = new CoordHarness();
    h.ok(acquire('w1'));
    expect(h.code(acquire('w1'))).toBe('lock_held');
  });

  it('auto-releases on TTL and renews', () => {
    const h = new CoordHarness();
    const g = grant(h.ok(acquire('w1')));
    h.advance(20_000);
    const r = grant(
      h.ok({ type: 'lock_renew', namespace: 'deploy', key: 'rollout', owner: 'w1', fence: g.fence, ttlSeconds: 60 }),
    );
    expect(r.expiresAt).toBe(h.nowMs + 60_000);
    expect(r.fence).toBe(g.fence);
    h.advance(60_000);
    expect(h.ok({ type: 'lock_inspect', namespace: 'deploy', key: 'rollout' })).toMatchObject({
      lock: { holder: null, lastFence: g.fence },
    });
    expect(h.code({ type: 'lock_renew', namespace: 'deploy', key: 'rollout', owner: 'w1', fence: g.fence })).toBe(
      'lease_lost',
    );
    const g2 = grant(h.ok(acquire('w2')));
    expect(g2.fence).toBeGreaterThan(g.fence);
    expect(h.code({ type: 'lock_renew', namespace: 'deploy', key: 'rollout', owner: 'w1', fence: g.fence })).toBe(
      'fence_stale',
    );
  });

  it('queues blocking waits FIFO and wakes one waiter per release', () => {
    const h = new CoordHarness();
    const [c1, c2, c3] = [h.register(), h.register(), h.register()];
    const g = grant(h.ok(acquire('w0')));
    const q1 = h.ok(acquire('w1', { waitSeconds: 60 }), { clientId: c1, seq: 1 });
    const q2 = h.ok(acquire('w2', { waitSeconds: 60 }), { clientId: c2, seq: 1 });
    h.ok(acquire('w3', { waitSeconds: 60 }), { clientId: c3, seq: 1 });
    expect(q1).toMatchObject({ type: 'lock_waiting', position: 1 });
    expect(q2).toMatchObject({ type: 'lock_waiting', position: 2 });
    // A retry of a waiting acquire returns the waiting result, not a second queue slot.
    expect(h.ok(acquire('w1', { waitSeconds: 60 }), { clientId: c1, seq: 1 })).toEqual(q1);
    h.advance(1000);
    const out = h.applyCommand({
      nowMs: h.nowMs,
      op: { type: 'lock_release', namespace: 'deploy', key: 'rollout', owner: 'w0', fence: g.fence },
    });
    expect(out.deliveries).toHaveLength(1);
    const d = out.deliveries[0];
    expect(d).toMatchObject({
      clientId: c1,
      seq: 1,
      result: { ok: true, value: { type: 'lock', lock: { owner: 'w1' } } },
    });
    const g1 = d?.result.ok ? grant(d.result.value) : undefined;
    expect(g1?.fence).toBeGreaterThan(g.fence);
    expect(g1?.expiresAt).toBe(h.nowMs + 30_000);
    // The retried acquire now returns the grant.
    expect(h.run(acquire('w1', { waitSeconds: 60 }), { clientId: c1, seq: 1 })).toEqual(d?.result);
    // Expiry of w1's TTL hands the lock to w2 via the leader's expire command.
    h.advance(30_000);
    const exp = h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } });
    expect(exp.result).toMatchObject({ ok: true, value: { locks: 1 } });
    expect(exp.deliveries.map((x) => [x.clientId, x.result.ok])).toEqual([[c2, true]]);
    expect(h.ok({ type: 'lock_list', namespace: 'deploy' })).toMatchObject({
      locks: [{ key: 'rollout', holder: { owner: 'w2' }, waiters: 1 }],
      truncated: false,
    });
  });

  it('times out waiters with lock_held and bounds the queue', () => {
    const h = new CoordHarness({ limits: { maxWaitersPerLock: 1 } });
    const [c1, c2] = [h.register(), h.register()];
    h.ok(acquire('w0', { ttlSeconds: 100 }));
    h.ok(acquire('w1', { waitSeconds: 5 }), { clientId: c1, seq: 1 });
    expect(h.code(acquire('w2', { waitSeconds: 5 }), { clientId: c2, seq: 1 })).toBe('lock_held');
    h.advance(5000);
    const exp = h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } });
    expect(exp.result).toMatchObject({ ok: true, value: { waiters: 1 } });
    expect(exp.deliveries).toEqual([
      {
        clientId: c1,
        seq: 1,
        result: expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'lock_held' }) }),
      },
    ]);
    expect(h.run(acquire('w1', { waitSeconds: 5 }), { clientId: c1, seq: 1 })).toEqual(exp.deliveries[0]?.result);
  });

  it('times out a lone waiter at its own deadline, long before the holder expires', () => {
    const h = new CoordHarness();
    const c1 = h.register();
    h.ok(acquire('w0', { ttlSeconds: 3600 }));
    h.ok(acquire('w1', { waitSeconds: 5 }), { clientId: c1, seq: 1 });
    h.advance(4999);
    expect(h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } }).deliveries).toEqual([]);
    h.advance(1);
    const exp = h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } });
    expect(exp.result).toMatchObject({ ok: true, value: { waiters: 1 } });
    expect(exp.deliveries).toMatchObject([{ clientId: c1, seq: 1, result: { ok: false } }]);
  });

  it('an idle expire does nothing, and a shortened lock TTL is still honoured', () => {
    const h = new CoordHarness();
    const g = grant(h.ok(acquire('w0', { ttlSeconds: 600 })));
    h.ok({ type: 'lock_renew', namespace: 'deploy', key: 'rollout', owner: 'w0', fence: g.fence, ttlSeconds: 5 });
    h.advance(4000);
    expect(h.ok({ type: 'expire' })).toEqual({ type: 'expired', entries: 0, locks: 0, waiters: 0, sessions: 0 });
    h.advance(1000);
    expect(h.ok({ type: 'expire' })).toMatchObject({ locks: 1 });
  });

  it('does not hand the lock to a waiter whose wait ended before the lock became free', () => {
    const h = new CoordHarness();
    const c1 = h.register();
    h.ok(acquire('w0', { ttlSeconds: 10 }));
    h.ok(acquire('w1', { waitSeconds: 5 }), { clientId: c1, seq: 1 });
    h.advance(20_000); // no expire ran in between
    const out = h.applyCommand({ nowMs: h.nowMs, op: acquire('w2') });
    expect(out.result).toMatchObject({ ok: true, value: { lock: { owner: 'w2' } } });
    expect(out.deliveries).toMatchObject([{ clientId: c1, result: { ok: false } }]);
  });

  it('validates TTL, metadata size and blocking without a session', () => {
    const h = new CoordHarness();
    expect(h.code(acquire('w1', { ttlSeconds: 3601 }))).toBe('invalid_argument');
    expect(h.code(acquire('w1', { metadata: 'x'.repeat(16_384) }))).toBe('value_too_large');
    expect(h.code(acquire('w1', { waitSeconds: 5 }))).toBe('invalid_argument');
    expect(h.code(acquire('w1', { waitSeconds: 3601 }))).toBe('invalid_argument');
    expect(grant(h.ok(acquire('w1', { ttlSeconds: undefined }))).ttlSeconds).toBe(60);
  });

  it('caps lock slots per namespace and the lock list', () => {
    const h = new CoordHarness({ limits: { maxLocksPerNamespace: 2, maxListLimit: 1 } });
    h.ok({ ...acquire('w'), key: 'a' });
    h.ok({ ...acquire('w'), key: 'b' });
    expect(h.code({ ...acquire('w'), key: 'c' })).toBe('namespace_full');
    expect(h.ok({ type: 'lock_list', namespace: 'deploy' })).toMatchObject({ locks: [{ key: 'a' }], truncated: true });
  });

  it('keeps fences strictly increasing per lock across release, expiry and leader change', () => {
    const h = new CoordHarness();
    let last = 0;
    for (let i = 0; i < 20; i++) {
      const g = grant(h.ok(acquire(`w${i}`, { ttlSeconds: 1 })));
      expect(g.fence).toBeGreaterThan(last);
      last = g.fence;
      if (i % 3 === 0)
        h.ok({ type: 'lock_release', namespace: 'deploy', key: 'rollout', owner: g.owner, fence: g.fence });
      else h.advance(1000);
      if (i % 5 === 0) h.term++;
    }
  });
});

describe('fenced writes', () => {
  it('accepts the current fence and rejects a stale one with fence_stale', () => {
    const h = new CoordHarness();
    const lockOp = (owner: string) =>
      ({ type: 'lock_acquire', namespace: 'deploy', key: 'rollout', owner, ttlSeconds: 10 }) as const;
    const g1 = grant(h.ok(lockOp('w1')));
    const fence1 = { namespace: 'deploy', key: 'rollout', token: g1.fence };
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, fence: fence1 });
    h.advance(10_000);
    // Expired but not re-granted: no newer fence exists, so the write still passes.
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 2, fence: fence1 });
    const g2 = grant(h.ok(lockOp('w2')));
    const r = h.run({ type: 'set', namespace: NS, key: 'k', value: 3, fence: fence1 });
    expect(!r.ok && r.error).toMatchObject({ code: 'fence_stale', details: { fence: g1.fence, current: g2.fence } });
    expect(h.code({ type: 'delete', namespace: NS, key: 'k', fence: fence1 })).toBe('fence_stale');
    expect(h.ok({ type: 'get', namespace: NS, key: 'k' })).toMatchObject({ entry: { value: 2 } });
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 4, fence: { ...fence1, token: g2.fence } });
    expect(h.code({ type: 'set', namespace: NS, key: 'k', value: 5, fence: { ...fence1, token: g2.fence + 1 } })).toBe(
      'invalid_argument',
    );
    expect(
      h.code({ type: 'set', namespace: NS, key: 'k', value: 5, fence: { namespace: 'deploy', key: 'none', token: 1 } }),
    ).toBe('fence_stale');
  });
});

describe('sessions and exactly-once', () => {
  it('applies a retried command once and returns its first result', () => {
    const h = new CoordHarness();
    const c = h.register();
    const first = h.run({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: c, seq: 1 });
    h.advance(5000);
    h.term = 3;
    const retry = h.run({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: c, seq: 1 });
    expect(retry).toEqual(first);
    expect(h.ok({ type: 'get', namespace: NS, key: 'k' })).toMatchObject({
      entry: { version: first.ok && first.value.type === 'entry' ? first.value.entry.version : '' },
    });
    // Error results are remembered too.
    const e1 = h.run({ type: 'set', namespace: NS, key: 'k', value: 2, ifNotExists: true }, { clientId: c, seq: 2 });
    h.ok({ type: 'delete', namespace: NS, key: 'k' });
    expect(
      h.run({ type: 'set', namespace: NS, key: 'k', value: 2, ifNotExists: true }, { clientId: c, seq: 2 }),
    ).toEqual(e1);
    expect(h.code({ type: 'get', namespace: NS, key: 'k' })).toBe('key_not_found');
  });

  it('rejects writes from unknown sessions and stale sequence numbers', () => {
    const h = new CoordHarness({ limits: { maxResultsPerSession: 2 } });
    const r = h.run({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: 'nobody', seq: 1 });
    expect(!r.ok && r.error.details).toMatchObject({ reason: 'session_expired' });
    const c = h.register();
    for (let seq = 1; seq <= 3; seq++)
      h.ok({ type: 'set', namespace: NS, key: `k${seq}`, value: 1 }, { clientId: c, seq });
    const stale = h.run({ type: 'set', namespace: NS, key: 'k1', value: 1 }, { clientId: c, seq: 1 });
    expect(!stale.ok && stale.error.details).toMatchObject({ reason: 'stale_sequence' });
    // Out-of-order seqs above the floor still apply once.
    h.ok({ type: 'set', namespace: NS, key: 'k9', value: 1 }, { clientId: c, seq: 9 });
    h.ok({ type: 'set', namespace: NS, key: 'k8', value: 1 }, { clientId: c, seq: 8 });
    expect(h.code({ type: 'set', namespace: NS, key: 'x', value: 1 }, { clientId: c, seq: 0 })).toBe(
      'invalid_argument',
    );
  });

  it('forgets acknowledged results', () => {
    const h = new CoordHarness();
    const c = h.register();
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: c, seq: 1 });
    h.run({ type: 'set', namespace: NS, key: 'k', value: 2 }, { clientId: c, seq: 2 }, 1);
    const r = h.run({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: c, seq: 1 });
    expect(!r.ok && r.error.details).toMatchObject({ reason: 'stale_sequence' });
  });

  it('expires idle sessions and evicts the least recently used beyond the bound', () => {
    const h = new CoordHarness({ limits: { sessionTtlSeconds: 10, maxSessions: 2 } });
    const a = h.register();
    const b = h.register();
    h.ok({ type: 'noop' }, { clientId: a, seq: 0 }); // touch a: b is now least recently used
    const c = h.register();
    expect(h.sm.sessionCount).toBe(2);
    expect(h.run({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: b, seq: 1 }).ok).toBe(false);
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: a, seq: 1 });
    h.advance(10_000);
    expect(h.ok({ type: 'expire' })).toMatchObject({ sessions: 2 });
    expect(h.run({ type: 'set', namespace: NS, key: 'k', value: 1 }, { clientId: c, seq: 1 }).ok).toBe(false);
  });

  it('bounds remembered result bytes globally', () => {
    const h = new CoordHarness({ limits: { maxCachedResultBytes: 4000 } });
    const clients = [h.register(), h.register(), h.register()];
    for (let i = 0; i < 30; i++) {
      const clientId = clients[i % 3] as string;
      h.ok(
        { type: 'set', namespace: NS, key: `k${i}`, value: 'v'.repeat(100) },
        { clientId, seq: Math.floor(i / 3) + 1 },
      );
    }
    const snap = JSON.parse(new TextDecoder().decode(h.sm.snapshot().subarray(4)));
    const remembered = snap.sessions.reduce((n: number, s: unknown[]) => n + (s[3] as unknown[]).length, 0);
    expect(remembered).toBeGreaterThan(0);
    expect(remembered).toBeLessThan(30);
    expect(JSON.stringify(snap.sessions).length).toBeLessThan(6000);
  });
});

describe('snapshot / restore', () => {
  it('round-trips the whole state and refuses garbage without changing anything', () => {
    const h = new CoordHarness();
    const c = h.register();
    h.ok({ type: 'set', namespace: NS, key: 'k', value: { a: [1, 2] } }, { clientId: c, seq: 1 });
    h.ok({ type: 'claim', namespace: NS, key: 'cl', value: 'x' });
    h.ok({ type: 'lease_acquire', namespace: NS, key: 'l', holder: 'w', ttlSeconds: 10, state: { s: 1 } });
    h.ok({ type: 'lock_acquire', namespace: 'd', key: 'r', owner: 'w', ttlSeconds: 10 });
    h.ok({ type: 'lock_acquire', namespace: 'd', key: 'r', owner: 'v', waitSeconds: 9 }, { clientId: c, seq: 2 });
    const snap = h.sm.snapshot();
    const other = new CoordHarness();
    other.sm.restore(snap);
    expect(other.sm.snapshot()).toEqual(snap);
    expect(other.sm.applied).toEqual(h.sm.applied);
    expect(other.sm.timeMs).toBe(h.sm.timeMs);
    expect(() => other.sm.restore(new Uint8Array([0x50, 0x43, 1, 3, 0x7b]))).toThrow(/malformed JSON/);
    const bad = new TextEncoder().encode(
      '{"index":1,"locks":[],"namespaces":[["x",[["k"]]]],"nowMs":0,"sessions":[],"term":1}',
    );
    const framed = new Uint8Array([0x50, 0x43, 1, 3, ...bad]);
    expect(() => other.sm.restore(framed)).toThrow(expect.objectContaining({ code: 'decode_error' }));
    expect(other.sm.snapshot()).toEqual(snap);
  });

  it('query answers reads without changing the state', () => {
    const h = new CoordHarness();
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, ttlSeconds: 5 });
    const before = h.sm.snapshot();
    expect(h.sm.query({ type: 'get', namespace: NS, key: 'k' })).toMatchObject({ ok: true });
    expect(h.sm.query({ type: 'get', namespace: NS, key: 'k' }, h.nowMs + 5000)).toMatchObject({ ok: false });
    expect(h.sm.query({ type: 'list', namespace: NS })).toMatchObject({ ok: true });
    expect(h.sm.query({ type: 'lock_list', namespace: NS })).toMatchObject({ ok: true });
    expect(h.sm.query({ type: 'lock_inspect', namespace: NS, key: 'k' })).toMatchObject({ ok: true });
    expect(h.sm.query({ type: 'set', namespace: NS, key: 'k', value: 2 })).toMatchObject({ ok: false });
    expect(h.sm.snapshot()).toEqual(before);
  });
});
