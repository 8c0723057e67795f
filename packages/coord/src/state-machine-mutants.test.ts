/**
 * State-machine time at the edges of its range, found unchecked by mutating
 * state-machine.ts by hand (docs/simulation.md, "Mutation testing
 * (Stryker)"): stamps of exactly 0 and MAX_TIME_MS are valid, and a command
 * without a valid stamp (or without anything) is an error result with no
 * deliveries that still takes its log index.
 */
import { describe, expect, it } from 'vitest';
import { CoordStateMachine, MAX_TIME_MS } from './state-machine.js';

describe('command stamps', () => {
  it('accepts a stamp of exactly MAX_TIME_MS and refuses one past it, which still takes its log index', () => {
    const sm = new CoordStateMachine({ limits: { maxTimeStepMs: MAX_TIME_MS } });
    expect(sm.apply({ nowMs: MAX_TIME_MS, op: { type: 'noop' } }, { index: 1, term: 1 }).result).toEqual({
      ok: true,
      value: { type: 'noop' },
    });
    expect(sm.timeMs).toBe(MAX_TIME_MS);
    const past = sm.apply({ nowMs: MAX_TIME_MS + 1, op: { type: 'noop' } }, { index: 2, term: 1 });
    expect(past.result).toMatchObject({ ok: false, error: { code: 'invalid_argument' } });
    expect(past.deliveries).toEqual([]);
    expect(sm.applied).toEqual({ index: 2, term: 1 });
    expect(sm.timeMs).toBe(MAX_TIME_MS);
  });

  it('accepts a stamp of 0', () => {
    const sm = new CoordStateMachine();
    expect(sm.apply({ nowMs: 0, op: { type: 'noop' } }, { index: 1, term: 1 }).result).toEqual({
      ok: true,
      value: { type: 'noop' },
    });
  });

  it('a missing command is an error result, not a throw, and takes its log index', () => {
    const sm = new CoordStateMachine();
    const out = sm.apply(null as unknown as Parameters<CoordStateMachine['apply']>[0], { index: 1, term: 1 });
    expect(out.result).toMatchObject({ ok: false, error: { code: 'invalid_argument' } });
    expect(out.deliveries).toEqual([]);
    expect(sm.applied).toEqual({ index: 1, term: 1 });
  });
});
