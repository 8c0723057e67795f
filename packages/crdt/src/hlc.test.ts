import { ClockDriftError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { compareHlc, HybridLogicalClock, mergeLww, mergePn, pnIncrement, pnValue } from './index.js';

describe('HybridLogicalClock', () => {
  it('issues strictly increasing stamps even when physical time stalls or goes back', () => {
    const clock = new HybridLogicalClock('a');
    const s1 = clock.now(1000);
    const s2 = clock.now(1000);
    const s3 = clock.now(999);
    const s4 = clock.now(1001);
    expect(s1).toEqual({ wallMs: 1000, logical: 0, node: 'a' });
    expect(s2).toEqual({ wallMs: 1000, logical: 1, node: 'a' });
    expect(s3).toEqual({ wallMs: 1000, logical: 2, node: 'a' });
    expect(s4).toEqual({ wallMs: 1001, logical: 0, node: 'a' });
    expect(compareHlc(s1, s2)).toBeLessThan(0);
    expect(compareHlc(s3, s4)).toBeLessThan(0);
  });

  it('adopts a remote stamp within the drift bound, so the next local stamp orders after it', () => {
    const clock = new HybridLogicalClock('a', { maxClockDriftMs: 60_000 });
    const remote = { wallMs: 50_000, logical: 7, node: 'b' };
    clock.receive(remote, 1000);
    const next = clock.now(1001);
    expect(compareHlc(next, remote)).toBeGreaterThan(0);
    expect(next).toEqual({ wallMs: 50_000, logical: 9, node: 'a' });
  });

  it('rejects a remote stamp more than maxClockDriftMs ahead, counts it and never adopts it', () => {
    const clock = new HybridLogicalClock('a', { maxClockDriftMs: 60_000 });
    clock.now(1000);
    const farAhead = { wallMs: 1000 + 60_001, logical: 0, node: 'b' };
    expect(() => clock.receive(farAhead, 1000)).toThrow(ClockDriftError);
    expect(clock.rejectedCount).toBe(1);
    expect(clock.now(1000)).toEqual({ wallMs: 1000, logical: 1, node: 'a' });
    // exactly at the bound is accepted
    clock.receive({ wallMs: 61_000, logical: 0, node: 'b' }, 1000);
    expect(clock.rejectedCount).toBe(1);
  });

  it('orders by wall time, then logical counter, then node id', () => {
    expect(compareHlc({ wallMs: 1, logical: 9, node: 'z' }, { wallMs: 2, logical: 0, node: 'a' })).toBe(-1);
    expect(compareHlc({ wallMs: 2, logical: 1, node: 'a' }, { wallMs: 2, logical: 0, node: 'z' })).toBe(1);
    expect(compareHlc({ wallMs: 2, logical: 1, node: 'b' }, { wallMs: 2, logical: 1, node: 'a' })).toBe(1);
    expect(compareHlc({ wallMs: 2, logical: 1, node: 'a' }, { wallMs: 2, logical: 1, node: 'a' })).toBe(0);
  });
});

describe('LWW register and PN-counter', () => {
  it('LWW: the greater stamp wins, node id breaks a tie, in either merge order', () => {
    const a = { value: 'from-a', stamp: { wallMs: 5, logical: 0, node: 'a' } };
    const b = { value: 'from-b', stamp: { wallMs: 5, logical: 0, node: 'b' } };
    expect(mergeLww(a, b).value).toBe('from-b');
    expect(mergeLww(b, a).value).toBe('from-b');
    expect(mergeLww(a, a)).toBe(a);
  });

  it('PN: per-node increments and decrements add up, may go negative, merge by per-node max', () => {
    let x = pnIncrement(new Map(), 'a', 3);
    x = pnIncrement(x, 'a', -5);
    let y = pnIncrement(new Map(), 'b', -4);
    y = mergePn(y, x);
    expect(pnValue(y)).toBe(-6);
    expect(pnValue(mergePn(x, y))).toBe(-6);
    expect(pnValue(mergePn(y, y))).toBe(-6);
  });
});
