/**
 * State-machine time at the edges of its range, found unchecked by mutating
 * state-machine.ts by hand (docs/simulation.md, "Mutation testing
 * (Stryker)"): a command stamped exactly MAX_TIME_MS is a valid command.
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
    expect(sm.applied).toEqual({ index: 2, term: 1 });
    expect(sm.timeMs).toBe(MAX_TIME_MS);
  });
});
