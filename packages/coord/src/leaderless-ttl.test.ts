/**
 * Grants made after a leaderless stretch last their whole TTL in real time.
 *
 * State-machine time stops while no leader proposes, then catches up by at
 * most `maxTimeStepMs` per command. A deadline counted from state-machine
 * time during the catch-up would already be in the past by the clocks: after
 * a 45 s outage a 10 s lock went to a second owner 70 ms later. New deadlines
 * and timestamps count from the command's stamp instead, while expiry is still
 * judged at state-machine time, so a leader whose clock stepped ahead still
 * cannot expire everything at once.
 */
import { describe, expect, it } from 'vitest';
import { CoordStateMachine } from './index.js';
import type { Operation } from './types.js';

const T0 = 1_700_000_000_000;
const OUTAGE_MS = 45_000;

/** A machine at default limits (5 s step) that last applied a command at T0. */
function afterOutage() {
  const sm = new CoordStateMachine();
  let index = 0;
  const apply = (nowMs: number, op: Operation, session?: { clientId: string; seq: number }) =>
    sm.apply({ nowMs, op, ...(session ?? {}) }, { index: ++index, term: 1 }).result;
  apply(T0, { type: 'set', namespace: 'n', key: 'before', value: 0, ttlSeconds: 30 });
  // Nothing is proposed for OUTAGE_MS (a whole-cluster restart, say); then a new leader's
  // commands arrive with stamps at the real time again.
  const back = T0 + OUTAGE_MS;
  /** What the leader proposes every second, and at each step of the catch-up. */
  const expireAt = (nowMs: number) => apply(nowMs, { type: 'expire' });
  const register = (nowMs: number) => {
    const r = apply(nowMs, { type: 'register_session' });
    if (!r.ok || r.value.type !== 'session') throw new Error('no session');
    return r.value.clientId;
  };
  return { sm, apply, back, expireAt, register };
}

describe('TTLs after a leaderless stretch longer than maxTimeStepMs', () => {
  it('a lock taken as the cluster comes back is not granted to anyone else before its TTL', () => {
    const { sm, apply, back, expireAt } = afterOutage();
    const granted = apply(back, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'a', ttlSeconds: 10 });
    expect(granted).toMatchObject({ ok: true, value: { type: 'lock', lock: { owner: 'a' } } });
    if (!granted.ok || granted.value.type !== 'lock') throw new Error('not granted');
    expect(granted.value.lock.expiresAt).toBe(back + 10_000);
    // The catch-up: many commands within the next 9.9 s, each moving time one step.
    for (let t = back + 10; t < back + 9_900; t += 10) {
      expireAt(t);
      const other = apply(t + 5, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'b', ttlSeconds: 10 });
      expect(other, `at +${t - back} ms`).toMatchObject({ ok: false, error: { code: 'lock_held' } });
    }
    expect(sm.timeMs).toBe(back + 9_895); // caught up with the clocks
    // After the TTL (state-machine time past the deadline) the lock is free again.
    expireAt(back + 10_001);
    expect(
      apply(back + 10_002, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'b', ttlSeconds: 10 }),
    ).toMatchObject({ ok: true, value: { lock: { owner: 'b' } } });
  });

  it('an entry written then reads as present for its TTL and reports the real creation time', () => {
    const { sm, apply, back, expireAt } = afterOutage();
    const set = apply(back, { type: 'set', namespace: 'n', key: 'k', value: 1, ttlSeconds: 10 });
    expect(set).toMatchObject({ ok: true, value: { entry: { createdAt: back, updatedAt: back } } });
    for (let t = back + 71; t < back + 9_900; t += 71) {
      expireAt(t);
      expect(sm.query({ type: 'get', namespace: 'n', key: 'k' }, t).ok, `at +${t - back} ms`).toBe(true);
      const claim = apply(t, { type: 'claim', namespace: 'n', key: 'k', value: 2 });
      expect(claim).toMatchObject({ ok: true, value: { won: false } });
    }
    // What was due long ago (written at T0 with 30 s) is gone: expiring late is allowed.
    expect(sm.query({ type: 'get', namespace: 'n', key: 'before' }, back + 9_900).ok).toBe(false);
  });

  it('a lease acquired or renewed then keeps its holder for the whole TTL', () => {
    const { apply, back, expireAt } = afterOutage();
    const lease = apply(back, { type: 'lease_acquire', namespace: 'n', key: 'ls', holder: 'h', ttlSeconds: 10 });
    expect(lease).toMatchObject({ ok: true, value: { lease: { deadlineAt: back + 10_000 } } });
    for (let t = back + 50; t < back + 9_900; t += 50) {
      expireAt(t);
      const other = apply(t, { type: 'lease_acquire', namespace: 'n', key: 'ls', holder: 'x', ttlSeconds: 10 });
      expect(other, `at +${t - back} ms`).toMatchObject({ ok: false, error: { code: 'lock_held' } });
    }
  });

  it('a renewal during the catch-up extends from its own stamp', () => {
    const { apply, back, expireAt } = afterOutage();
    const held = apply(back - 40_000, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'a', ttlSeconds: 60 });
    if (!held.ok || held.value.type !== 'lock') throw new Error('not granted');
    const renewed = apply(back, {
      type: 'lock_renew',
      namespace: 'n',
      key: 'l',
      owner: 'a',
      fence: held.value.lock.fence,
      ttlSeconds: 10,
    });
    expect(renewed).toMatchObject({ ok: true, value: { lock: { expiresAt: back + 10_000 } } });
    for (let t = back + 100; t < back + 9_900; t += 100) expireAt(t);
    expect(
      apply(back + 9_950, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'b', ttlSeconds: 1 }),
    ).toMatchObject({ ok: false, error: { code: 'lock_held' } });
  });

  it('a waiter handed the lock during the catch-up gets its whole TTL and its whole wait', () => {
    const { apply, back, expireAt, register } = afterOutage();
    const c = register(back);
    apply(back, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'a', ttlSeconds: 1 });
    const wait = apply(
      back + 1,
      { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'w', ttlSeconds: 10, waitSeconds: 5 },
      { clientId: c, seq: 1 },
    );
    expect(wait).toMatchObject({ ok: true, value: { type: 'lock_waiting', waitDeadlineAt: back + 5_001 } });
    // The holder's second ends; the waiter is handed the lock by the next expire.
    for (let t = back + 100; t < back + 1_100; t += 100) expireAt(t);
    const inspect = apply(back + 1_100, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'b', ttlSeconds: 1 });
    expect(inspect).toMatchObject({ ok: false, error: { code: 'lock_held', details: { owner: 'w' } } });
    for (let t = back + 1_200; t < back + 10_900; t += 100) {
      expireAt(t);
      const other = apply(t, { type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'b', ttlSeconds: 1 });
      expect(other, `at +${t - back} ms`).toMatchObject({ ok: false, error: { code: 'lock_held' } });
    }
  });

  it('keeps the clamp: a leader whose clock stepped an hour ahead still expires only one step', () => {
    const { sm, apply, back } = afterOutage();
    apply(back, { type: 'set', namespace: 'n', key: 'k', value: 1, ttlSeconds: 60 });
    apply(back + 3_600_000, { type: 'expire' });
    // State-machine time moved by one step past the stamps it had; the entry is still there.
    expect(sm.timeMs).toBeLessThanOrEqual(T0 + 10_000);
    expect(sm.query({ type: 'get', namespace: 'n', key: 'k' }).ok).toBe(true);
  });
});
