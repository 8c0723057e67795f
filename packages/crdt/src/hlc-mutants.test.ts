// Exact behaviour of the hybrid logical clock that the mutation run
// (docs/simulation.md, "Mutation testing (Stryker)") found unchecked: the
// receive rule of each case (Kulkarni et al.), the carry at MAX_LOGICAL, peek,
// and the guards on physical time, node id and drift bound.
import { InvalidArgumentError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { HybridLogicalClock } from './hlc.js';
import { MAX_LOGICAL } from './limits.js';

describe('HybridLogicalClock receive rule', () => {
  it('remote at the same wall as the clock and the physical time: max logical + 1', () => {
    const clock = new HybridLogicalClock('a', { after: { wallMs: 100, logical: 3, node: 'a' } });
    expect(clock.receive({ wallMs: 100, logical: 7, node: 'b' }, 90)).toEqual({ wallMs: 100, logical: 8, node: 'a' });
  });

  it('clock ahead of the remote and of physical time: its own logical + 1, whatever the remote logical', () => {
    const clock = new HybridLogicalClock('a', { after: { wallMs: 100, logical: 3, node: 'a' } });
    expect(clock.receive({ wallMs: 50, logical: 9, node: 'b' }, 60)).toEqual({ wallMs: 100, logical: 4, node: 'a' });
    // every receive event gets a stamp greater than the last one
    expect(clock.receive({ wallMs: 50, logical: 9, node: 'b' }, 60)).toEqual({ wallMs: 100, logical: 5, node: 'a' });
  });

  it('remote ahead of the clock and of physical time: the remote logical + 1, whatever the clock logical', () => {
    const clock = new HybridLogicalClock('a', { after: { wallMs: 100, logical: 40, node: 'a' } });
    expect(clock.receive({ wallMs: 200, logical: 2, node: 'b' }, 150)).toEqual({ wallMs: 200, logical: 3, node: 'a' });
  });

  it('physical time ahead of both: logical 0', () => {
    const clock = new HybridLogicalClock('a', { after: { wallMs: 100, logical: 40, node: 'a' } });
    expect(clock.receive({ wallMs: 200, logical: 9, node: 'b' }, 300)).toEqual({ wallMs: 300, logical: 0, node: 'a' });
  });

  it('peek returns the last stamp issued or adopted, changing nothing', () => {
    const clock = new HybridLogicalClock('a');
    expect(clock.peek()).toEqual({ wallMs: 0, logical: 0, node: 'a' });
    clock.now(10);
    clock.receive({ wallMs: 10, logical: 4, node: 'b' }, 5);
    expect(clock.peek()).toEqual({ wallMs: 10, logical: 5, node: 'a' });
    expect(clock.peek()).toEqual({ wallMs: 10, logical: 5, node: 'a' });
  });
});

describe('HybridLogicalClock carry', () => {
  it('uses logical MAX_LOGICAL itself, and only past it moves to the next millisecond', () => {
    const clock = new HybridLogicalClock('a', { after: { wallMs: 5, logical: MAX_LOGICAL - 1, node: 'a' } });
    expect(clock.now(5)).toEqual({ wallMs: 5, logical: MAX_LOGICAL, node: 'a' });
    expect(clock.now(5)).toEqual({ wallMs: 6, logical: 0, node: 'a' });
  });
});

describe('HybridLogicalClock guards', () => {
  it('refuses a negative, fractional or non-finite physical time and changes nothing', () => {
    const clock = new HybridLogicalClock('a');
    clock.now(10);
    for (const bad of [-1, 10.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => clock.now(bad)).toThrow(InvalidArgumentError);
      expect(() => clock.receive({ wallMs: 10, logical: 0, node: 'b' }, bad)).toThrow(InvalidArgumentError);
    }
    expect(clock.peek()).toEqual({ wallMs: 10, logical: 0, node: 'a' });
    // zero is a physical time like any other
    expect(new HybridLogicalClock('b').now(0)).toEqual({ wallMs: 0, logical: 1, node: 'b' });
  });

  it('refuses an empty node id', () => {
    expect(() => new HybridLogicalClock('')).toThrow(InvalidArgumentError);
  });

  it('refuses a negative, fractional or non-finite drift bound, and accepts 0', () => {
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new HybridLogicalClock('a', { maxClockDriftMs: bad })).toThrow(InvalidArgumentError);
    }
    expect(new HybridLogicalClock('a', { maxClockDriftMs: 0 }).maxClockDriftMs).toBe(0);
  });
});
