/**
 * Edge cases found by attacking the state machine: replica-dependent output
 * order, ghost lock holders, unbounded time jumps and lost `__proto__` keys.
 */

import { DecodeError, InvalidArgumentError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { decodeCommand, decodeResult, encodeCommand, encodeResult, MAX_ENVELOPE_DEPTH } from './codec.js';
import { CoordHarness } from './harness.js';
import { CoordStateMachine, DEFAULT_LIMITS, MAX_JSON_DEPTH, MAX_TIME_MS } from './index.js';
import type { JsonValue } from './json.js';
import type { Command, Delivery, Operation } from './types.js';

const NS = 'locks';
const T0 = 1_700_000_000_000;

/** The lock key each delivery is about (a grant's key, or a wait timeout's lock name). */
function deliveryKeys(deliveries: readonly Delivery[]): string[] {
  return deliveries.map((d) => {
    if (d.result.ok) return d.result.value.type === 'lock' ? d.result.value.lock.key : '?';
    return String(d.result.error.details.lock).split('/')[1] as string;
  });
}

function acquire(key: string, owner: string, extra: Partial<Extract<Operation, { type: 'lock_acquire' }>> = {}) {
  return { type: 'lock_acquire' as const, namespace: NS, key, owner, ttlSeconds: 10, ...extra };
}

/** A replica whose slots were created in the order zz, aa, each held with one waiter queued. */
function heldWithWaiters(limits = {}): CoordHarness {
  const h = new CoordHarness({ limits }, T0);
  const c = h.register();
  let seq = 0;
  for (const key of ['zz', 'aa']) {
    h.ok(acquire(key, `holder-${key}`));
    h.ok(acquire(key, `waiter-${key}`, { waitSeconds: 60 }), { clientId: c, seq: ++seq });
  }
  return h;
}

/** A second replica restored from `h`'s snapshot, at the same log position and clock. */
function restoredFrom(h: CoordHarness, limits = {}): CoordHarness {
  const r = new CoordHarness({ limits }, h.nowMs);
  r.sm.restore(h.sm.snapshot());
  r.index = h.index;
  return r;
}

describe('the same output order on every replica', () => {
  it('lock_list hands over expired locks in key order, on a live replica and a restored one alike', () => {
    const live = heldWithWaiters();
    const restored = restoredFrom(live);
    live.advance(11_000);
    restored.advance(11_000);
    const op: Command = { nowMs: live.nowMs, op: { type: 'lock_list', namespace: NS } };
    const a = live.applyCommand(op);
    const b = restored.applyCommand(op);
    expect(deliveryKeys(a.deliveries)).toEqual(['aa', 'zz']);
    expect(b.deliveries).toEqual(a.deliveries);
    expect(restored.sm.snapshot()).toEqual(live.sm.snapshot());
  });

  it('a lock_acquire that finds the namespace full hands over expired locks in key order', () => {
    const limits = { maxLocksPerNamespace: 2 };
    const live = heldWithWaiters(limits);
    const restored = restoredFrom(live, limits);
    live.advance(11_000);
    restored.advance(11_000);
    const op: Command = { nowMs: live.nowMs, op: acquire('mm', 'newcomer') };
    const a = live.applyCommand(op);
    const b = restored.applyCommand(op);
    expect(a.result.ok).toBe(false); // the waiters took both slots over: still full
    expect(deliveryKeys(a.deliveries)).toEqual(['aa', 'zz']);
    expect(b.deliveries).toEqual(a.deliveries);
  });
});

describe('a waiter is never granted after its own deadline', () => {
  it('after a leaderless stretch, a waiter whose wait ended gets its timeout, not the lock', () => {
    const h = new CoordHarness({}, T0);
    const c = h.register();
    h.ok(acquire('k', 'holder')); // expires at T0 + 10 s
    h.ok(acquire('k', 'waiter', { waitSeconds: 15 }), { clientId: c, seq: 1 }); // gives up at T0 + 15 s
    h.advance(20_000); // no command between T0 and T0 + 20 s: the lock fell free at +10 s, unseen
    const out = h.applyCommand({ nowMs: h.nowMs, op: { type: 'lock_inspect', namespace: NS, key: 'k' } });
    expect(out.deliveries).toHaveLength(1);
    const d = out.deliveries[0] as Delivery;
    expect(d.result.ok ? 'granted' : d.result.error.code).toBe('lock_held');
    expect(out.result).toMatchObject({ ok: true, value: { type: 'lock_info', lock: { holder: null, waiters: 0 } } });
  });

  it('a waiter still within its wait when the state machine sees the lock free is granted', () => {
    const h = new CoordHarness({}, T0);
    const c = h.register();
    h.ok(acquire('k', 'holder'));
    h.ok(acquire('k', 'waiter', { waitSeconds: 30 }), { clientId: c, seq: 1 });
    h.advance(20_000);
    const out = h.applyCommand({ nowMs: h.nowMs, op: { type: 'expire' } });
    expect(out.deliveries.map((d) => d.result.ok)).toEqual([true]);
    expect(out.deliveries[0]?.result).toMatchObject({ value: { lock: { owner: 'waiter', acquiredAt: h.nowMs } } });
  });
});

describe('state-machine time moves at most maxTimeStepMs per command', () => {
  const set = (key: string, ttlSeconds: number): Operation => ({
    type: 'set',
    namespace: 'n',
    key,
    value: 1,
    ttlSeconds,
  });

  it('defaults to 5 s, and the first command sets the clock wherever it is', () => {
    expect(DEFAULT_LIMITS.maxTimeStepMs).toBe(5_000);
    const sm = new CoordStateMachine();
    sm.apply({ nowMs: T0, op: { type: 'noop' } }, { index: 1, term: 1 });
    expect(sm.timeMs).toBe(T0);
  });

  it('one command from a leader whose clock stepped an hour ahead expires nothing due later than 5 s', () => {
    const sm = new CoordStateMachine();
    let index = 0;
    const apply = (nowMs: number, op: Operation) => sm.apply({ nowMs, op }, { index: ++index, term: 1 });
    apply(T0, set('short', 1));
    apply(T0, set('mid', 30));
    apply(T0, { type: 'lock_acquire', namespace: 'n', key: 'lock', owner: 'o', ttlSeconds: 30 });
    apply(T0, { type: 'lease_acquire', namespace: 'n', key: 'lease', holder: 'h', ttlSeconds: 30 });
    const jumped = apply(T0 + 3_600_000, { type: 'expire' });
    expect(sm.timeMs).toBe(T0 + 5_000);
    expect(jumped.result).toMatchObject({ ok: true, value: { entries: 1, locks: 0 } }); // only 'short' (1 s)
    expect(sm.query({ type: 'get', namespace: 'n', key: 'mid' }).ok).toBe(true);
    expect(sm.query({ type: 'lock_inspect', namespace: 'n', key: 'lock' })).toMatchObject({
      value: { lock: { holder: { owner: 'o' } } },
    });
    expect(sm.query({ type: 'lease_attach', namespace: 'n', key: 'lease', holder: 'h' })).toMatchObject({
      value: { type: 'lease' },
    });
    // Later commands keep moving time, one step each, and never past their own stamp.
    apply(T0 + 3_600_000, { type: 'noop' });
    expect(sm.timeMs).toBe(T0 + 10_000);
    apply(T0 + 12_000, { type: 'noop' });
    expect(sm.timeMs).toBe(T0 + 12_000);
  });

  it('a read after a leaderless stretch judges expiry as a conditional write issued then would', () => {
    const build = () => {
      const sm = new CoordStateMachine();
      let index = 0;
      const apply = (nowMs: number, op: Operation) => sm.apply({ nowMs, op }, { index: ++index, term: 1 });
      apply(T0, set('k', 10));
      apply(T0, { type: 'lock_acquire', namespace: 'n', key: 'lock', owner: 'o', ttlSeconds: 10 });
      return { sm, apply };
    };
    // No command for 60 s: state-machine time is still T0. A reader at T0 + 60 s sees what
    // a command stamped then would see: time moved by one step (5 s), so both still live.
    const at = T0 + 60_000;
    const { sm } = build();
    expect(sm.query({ type: 'get', namespace: 'n', key: 'k' }, at).ok).toBe(true);
    expect(sm.query({ type: 'lock_inspect', namespace: 'n', key: 'lock' }, at)).toMatchObject({
      value: { lock: { holder: { owner: 'o' } } },
    });
    expect(sm.timeMs).toBe(T0); // a read moves nothing
    // Within one step of state-machine time the reader's clock counts as before.
    expect(sm.query({ type: 'get', namespace: 'n', key: 'k' }, T0 + 4_000).ok).toBe(true);
    expect(sm.query({ type: 'get', namespace: 'n', key: 'k' }, T0 + 9_999).ok).toBe(true);
    // The conditional writes issued at that moment agree with those reads.
    const claim = build().apply(at, { type: 'claim', namespace: 'n', key: 'k', value: 2 });
    expect(claim.result).toMatchObject({ ok: true, value: { type: 'claim', won: false, value: 1 } });
    const lock = build().apply(at, { type: 'lock_acquire', namespace: 'n', key: 'lock', owner: 'p', ttlSeconds: 10 });
    expect(lock.result).not.toMatchObject({ ok: true, value: { type: 'lock' } });
    // One step later in state-machine time, reads and writes both find them expired.
    const later = build();
    later.apply(T0 + 5_000, { type: 'noop' });
    expect(later.sm.query({ type: 'get', namespace: 'n', key: 'k' }, at).ok).toBe(false);
    expect(later.apply(at, { type: 'claim', namespace: 'n', key: 'k', value: 2 }).result).toMatchObject({
      value: { won: true },
    });
  });

  it('the same through applyBytes, and the bound is configurable (same on every replica)', () => {
    const sm = new CoordStateMachine({ limits: { maxTimeStepMs: 60_000 } });
    sm.applyBytes(encodeCommand({ nowMs: T0, op: { type: 'noop' } }), { index: 1, term: 1 });
    sm.applyBytes(encodeCommand({ nowMs: T0 + 3_600_000, op: { type: 'noop' } }), { index: 2, term: 1 });
    expect(sm.timeMs).toBe(T0 + 60_000);
  });

  it('refuses a bound that is not a positive integer', () => {
    for (const maxTimeStepMs of [0, -1, 1.5, Number.NaN, MAX_TIME_MS + 1]) {
      expect(() => new CoordStateMachine({ limits: { maxTimeStepMs } })).toThrow(/maxTimeStepMs/);
    }
  });
});

describe('__proto__ keys are stored faithfully', () => {
  const text = '{"b":1,"__proto__":{"x":2}}';

  function check(value: unknown): void {
    const v = value as Record<string, unknown>;
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toEqual({ x: 2 });
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(JSON.stringify(v)).toBe('{"__proto__":{"x":2},"b":1}'); // canonical key order
  }

  for (const viaCodec of [false, true]) {
    it(`set and get keep the key${viaCodec ? ' (through the codec)' : ''}, and so do snapshots`, () => {
      const h = new CoordHarness({}, T0, viaCodec);
      const set = h.ok({ type: 'set', namespace: 'n', key: 'k', value: JSON.parse(text) });
      if (set.type !== 'entry') throw new Error(set.type);
      check(set.entry.value);
      const got = h.ok({ type: 'get', namespace: 'n', key: 'k' });
      if (got.type !== 'got') throw new Error(got.type);
      check(got.entry.value);
      const r = restoredFrom(h);
      const back = r.sm.query({ type: 'get', namespace: 'n', key: 'k' });
      if (!back.ok || back.value.type !== 'got') throw new Error('lost');
      check(back.value.entry.value);
      expect(r.sm.snapshot()).toEqual(h.sm.snapshot());
    });
  }

  it('lease state and lock metadata keep the key too', () => {
    const h = new CoordHarness({}, T0);
    const l = h.ok({
      type: 'lease_acquire',
      namespace: 'n',
      key: 'l',
      holder: 'h',
      ttlSeconds: 10,
      state: JSON.parse(text),
    });
    if (l.type !== 'lease') throw new Error(l.type);
    check(l.lease.state);
    const g = h.ok({ type: 'lock_acquire', namespace: 'n', key: 'g', owner: 'o', metadata: JSON.parse(text) });
    if (g.type !== 'lock') throw new Error(g.type);
    check(g.lock.metadata);
  });
});

describe('nesting: a value at the depth limit travels in every envelope', () => {
  function nested(levels: number): JsonValue {
    let v: JsonValue = 1;
    for (let i = 0; i < levels; i++) v = i % 2 === 0 ? [v] : { k: v };
    return v;
  }

  it('a value nested MAX_JSON_DEPTH deep is written through the codec, read, listed, snapshotted and restored', () => {
    const h = new CoordHarness({}, T0, true);
    const c = h.register();
    const value = nested(MAX_JSON_DEPTH);
    h.ok({ type: 'set', namespace: 'n', key: 'k', value }, { clientId: c, seq: 1 });
    h.ok({ type: 'lock_acquire', namespace: 'n', key: 'l', owner: 'o', metadata: nested(32) }, { clientId: c, seq: 2 });
    h.ok(
      { type: 'lease_acquire', namespace: 'n', key: 'e', holder: 'h', ttlSeconds: 10, state: value },
      { clientId: c, seq: 3 },
    );
    for (const op of [
      { type: 'get', namespace: 'n', key: 'k' },
      { type: 'list', namespace: 'n' },
      { type: 'lock_list', namespace: 'n' },
    ] as Operation[]) {
      const result = h.run(op, { clientId: c, seq: 4 + ['get', 'list', 'lock_list'].indexOf(op.type) });
      expect(result.ok).toBe(true);
      expect(decodeResult(encodeResult(result))).toEqual(result);
    }
    const r = restoredFrom(h);
    expect(r.sm.snapshot()).toEqual(h.sm.snapshot());
    expect(r.sm.query({ type: 'get', namespace: 'n', key: 'k' })).toMatchObject({ value: { entry: { value } } });
  });

  it('a value one level deeper is refused with invalid_argument, through the codec too', () => {
    const h = new CoordHarness({}, T0, true);
    expect(h.code({ type: 'set', namespace: 'n', key: 'k', value: nested(MAX_JSON_DEPTH + 1) })).toBe(
      'invalid_argument',
    );
  });

  it('decodeCommand accepts exactly the nesting encodeCommand writes: the bytes re-encode, or DecodeError', () => {
    // A command wraps its value two levels deep (command, op).
    for (const levels of [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 8, MAX_ENVELOPE_DEPTH - 2]) {
      const command: Command = {
        nowMs: 1,
        op: { type: 'set', namespace: 'n', key: 'k', value: nested(levels) },
      };
      const bytes = encodeCommand(command);
      expect(encodeCommand(decodeCommand(bytes))).toEqual(bytes);
    }
    const text = `{"nowMs":1,"op":{"key":"k","namespace":"n","type":"set","value":${'['.repeat(MAX_ENVELOPE_DEPTH - 1)}${']'.repeat(MAX_ENVELOPE_DEPTH - 1)}}}`;
    const tooDeep = new Uint8Array([0x50, 0x43, 1, 1, ...new TextEncoder().encode(text)]);
    expect(() => decodeCommand(tooDeep)).toThrow(DecodeError);
    expect(() =>
      encodeCommand({
        nowMs: 1,
        op: { type: 'set', namespace: 'n', key: 'k', value: nested(MAX_ENVELOPE_DEPTH - 1) },
      }),
    ).toThrow(InvalidArgumentError);
  });

  it('decoders refuse numbers JSON cannot carry back (1e400 parses to Infinity) with DecodeError', () => {
    const frame = (tag: number, text: string) =>
      new Uint8Array([0x50, 0x43, 1, tag, ...new TextEncoder().encode(text)]);
    expect(() =>
      decodeCommand(frame(1, '{"nowMs":1,"op":{"key":"k","namespace":"n","type":"set","value":[1e400]}}')),
    ).toThrow(DecodeError);
    expect(() => decodeResult(frame(2, '{"ok":true,"value":{"type":"noop","x":-1e999}}'))).toThrow(DecodeError);
    const sm = new CoordStateMachine();
    expect(() =>
      sm.restore(frame(3, '{"index":0,"locks":[],"namespaces":[],"nowMs":1e400,"sessions":[],"term":0}')),
    ).toThrow(DecodeError);
    expect(
      decodeCommand(frame(1, '{"nowMs":1,"op":{"key":"k","namespace":"n","type":"set","value":[1e300]}}')),
    ).toMatchObject({
      op: { value: [1e300] },
    });
  });
});
