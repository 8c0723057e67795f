import { SeededRandom } from '@parley/interface';
import { Simulation } from '@parley/sim';
import { describe, expect, it } from 'vitest';
import { matchScenarios, runScenario } from '../../registry.js';
import { LEASE_DRIFT_BOUND, leaseDriftClocks, RESYNC_MS, resyncClocks, resyncedSkewBoundMs } from './lease-drift.js';
import '../index.js';

const VOTERS = ['n1', 'n2', 'n3', 'n4', 'n5'];

describe('coord-5-lease-drift clocks', () => {
  it('draws one slow voter and fast others, tick periods within the lease bound', () => {
    const c = leaseDriftClocks(new SeededRandom(7), VOTERS, 100, {
      slowPpm: -110_000,
      fastPpm: { min: 80_000, max: 100_000 },
    });
    expect(c.drifts.filter((d) => d === -110_000)).toHaveLength(1);
    expect(c.drifts[VOTERS.indexOf(c.slow)]).toBe(-110_000);
    for (const d of c.drifts) if (d !== -110_000) expect(d >= 80_000 && d <= 100_000).toBe(true);
    // 100 ms ticks: 113 ms on the slow clock, 91–93 ms on the fast ones.
    expect(c.tickRatio).toBeGreaterThan(1.2);
    expect(c.tickRatio).toBeLessThan(LEASE_DRIFT_BOUND);
    expect(LEASE_DRIFT_BOUND).toBeCloseTo(9 / 7, 10);
  });

  it('refuses drifts that would put tick periods beyond the assumption', () => {
    const rng = new SeededRandom(1);
    // 125 ms against 91 ms: 1.37×, beyond 9/7.
    expect(() => leaseDriftClocks(rng, VOTERS, 100, { slowPpm: -200_000, fastPpm: { min: 0, max: 100_000 } })).toThrow(
      /beyond/,
    );
    // Within 9/7 but not below its safety share (113 / 88 = 1.284).
    expect(() => leaseDriftClocks(rng, VOTERS, 100, { slowPpm: -110_000, fastPpm: { min: 0, max: 140_000 } })).toThrow(
      /beyond/,
    );
    expect(() => leaseDriftClocks(rng, VOTERS, 100, { slowPpm: 10_000, fastPpm: { min: 0, max: 0 } })).toThrow(
      /slowPpm/,
    );
  });

  it('ε covers the offsets and the drift between two resyncs', () => {
    expect(resyncedSkewBoundMs([-40, 30, 0], [-110_000, 100_000, 80_000])).toBe(70 + (210_000 * RESYNC_MS) / 1e6 + 2);
    expect(resyncedSkewBoundMs([10, 20], [50_000, 60_000])).toBe(20 + 30 + 2);
  });

  it('resyncs the clocks to their offsets, and fails the run when they spread beyond ε', async () => {
    const run = async (bound: number) => {
      const sim = new Simulation({ seed: 3 });
      const offsets = [20, -30];
      const drifts = [100_000, -110_000];
      for (const [i, id] of ['a', 'b'].entries()) {
        sim.addHost(id, async () => undefined, {
          clock: { offsetMs: offsets[i] as number, driftPpm: drifts[i] as number },
        });
      }
      const stats = resyncClocks(sim, ['a', 'b'], offsets, bound);
      await sim.runFor(5 * RESYNC_MS + 10);
      return { sim, stats };
    };
    const eps = resyncedSkewBoundMs([20, -30], [100_000, -110_000]);
    const ok = await run(eps);
    expect(ok.sim.failure).toBeUndefined();
    // 10 ms after a resync every clock reads its offset again, give or take 10 ms of drift.
    expect(Math.abs(ok.sim.host('a').clock.skewMs() - 20)).toBeLessThanOrEqual(2);
    expect(Math.abs(ok.sim.host('b').clock.skewMs() + 30)).toBeLessThanOrEqual(2);
    // 50 ms of offsets plus 500 ms at a 21% spread: about 155 ms just before each resync.
    expect(ok.stats.maxSpreadMs).toBeGreaterThan(150);
    expect(ok.stats.maxSpreadMs).toBeLessThanOrEqual(eps);
    const tight = await run(100);
    expect(tight.sim.failure?.message).toMatch(/coord\/lease-drift-clock-bound/);
  });

  it('a run keeps clocks within ε, moves leadership to the slow voter and cuts it off with clients reading there', async () => {
    const scenario = matchScenarios('coord-5-lease-drift')[0];
    if (!scenario) throw new Error('coord-5-lease-drift is not registered');
    const r = await runScenario(scenario, 11);
    expect(r.failure).toBeUndefined();
    const m = r.metrics;
    expect(m.skewBoundMs).toBeLessThan(250);
    expect(m.maxClockSpreadMs).toBeGreaterThan(0);
    expect(m.maxClockSpreadMs).toBeLessThanOrEqual(m.skewBoundMs as number);
    expect(m.leaseDriftCuts).toBeGreaterThan(0);
    expect(m.leaseDriftDeposedWindows).toBeGreaterThan(0);
    expect(m['guard.leaseReadsServed']).toBeGreaterThan(0);
    expect(m['guard.readsAtDeposedLeader']).toBeGreaterThan(0);
    // The real lease never answers at the deposed leader.
    expect(m.readsServedDeposed).toBe(0);
  }, 60_000);
});
