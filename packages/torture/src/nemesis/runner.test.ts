/** The runner keeps a drawn schedule to the run's nominal length: no fault starts past it. */
import { describe, expect, it } from 'vitest';
import type { Cluster } from '../cluster.js';
import { Recorder } from '../history.js';
import { NemesisRunner, startsInTime } from './runner.js';
import { makeSchedule, NEMESES } from './schedule.js';

describe('the nemesis runner', () => {
  it('starts a step only if its gap ends before the nominal length', () => {
    expect(startsInTime(10_000, 5_000, 20_000)).toBe(true);
    expect(startsInTime(16_000, 5_000, 20_000)).toBe(false);
    expect(startsInTime(1e12, 5_000, Number.POSITIVE_INFINITY)).toBe(true);
  });

  it('leaves every step unplayed, touching nothing, once the run is past its length', async () => {
    const schedule = makeSchedule(
      {
        seed: 3,
        backend: 'raft',
        durationMs: 600_000,
        nemeses: [...NEMESES],
        maxClockOffsetMs: 500,
        outageMs: [20_000, 45_000],
        quietMs: [3_000, 8_000],
        tailMs: 15_000,
      },
      { servers: ['n1', 'n2', 'n3'], clockNodes: ['n1', 'n2', 'n3'], diskNodes: ['n1', 'n2', 'n3'] },
    );
    expect(schedule.steps.length).toBeGreaterThan(0);
    const rec = new Recorder();
    // No step may start, so the runner never reaches the cluster.
    const runner = new NemesisRunner(undefined as unknown as Cluster, rec, undefined, () => {});
    await expect(runner.run(schedule, 0)).resolves.toBe(schedule.steps.length);
    expect(rec.faults).toEqual([]);
  });
});
