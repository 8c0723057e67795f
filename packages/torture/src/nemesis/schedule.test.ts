/** The schedule: a pure function of the seed, within its nominal length, and read back exactly. */
import { describe, expect, it } from 'vitest';
import { makeSchedule, NEMESES, parseSchedule, type ScheduleOptions } from './schedule.js';

const options: ScheduleOptions = {
  seed: 7,
  backend: 'raft',
  durationMs: 600_000,
  nemeses: [...NEMESES],
  maxClockOffsetMs: 500,
  outageMs: [20_000, 45_000],
  quietMs: [3_000, 8_000],
  tailMs: 15_000,
};
const shape = { servers: ['n1', 'n2', 'n3'], clockNodes: ['n1', 'n2', 'n3', 'n4'], diskNodes: ['n1', 'n2', 'n3'] };

describe('fault schedules', () => {
  it('are a function of the seed', () => {
    expect(makeSchedule(options, shape)).toEqual(makeSchedule(options, shape));
    expect(makeSchedule({ ...options, seed: 8 }, shape)).not.toEqual(makeSchedule(options, shape));
  });

  it('draw every nemesis, keep their nominal length and the bounds asked for', () => {
    const s = makeSchedule(options, shape);
    expect(new Set(s.steps.map((x) => x.kind))).toEqual(new Set(NEMESES));
    const nominal = s.steps.reduce((t, x) => t + x.gapMs + x.durationMs, 0);
    expect(nominal + options.tailMs).toBeLessThanOrEqual(options.durationMs);
    for (const x of s.steps) {
      if (x.kind === 'outage') expect(x.durationMs).toBeGreaterThanOrEqual(20_000);
      for (const ms of Object.values(x.offsets ?? {})) expect(Math.abs(ms)).toBeLessThanOrEqual(500);
      if (x.peer !== undefined) expect(x.peer).not.toBe(x.target);
    }
  });

  it('leave out nemeses the cluster cannot take, and read back what they wrote', () => {
    const s = makeSchedule(options, { servers: ['e1', 'e2', 'e3'], clockNodes: [], diskNodes: [] });
    expect(s.steps.some((x) => x.kind === 'clock' || x.kind.startsWith('disk'))).toBe(false);
    expect(parseSchedule(JSON.stringify(s))).toEqual(s);
    expect(() => parseSchedule('{"version":2}')).toThrow(/not a torture schedule/);
    expect(() => parseSchedule(JSON.stringify({ ...s, steps: [{ ...s.steps[0], kind: 'meteor' }] }))).toThrow(
      /unknown nemesis/,
    );
  });
});
