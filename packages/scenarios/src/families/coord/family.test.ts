import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized coord sweep: every coord-* scenario on a fixed block of seeds (the full sweep is `npm run sim`). */
const CI_SEEDS = 5;
const FIRST_SEED = 30_000;

describe('coord-* CI sweep', () => {
  it('registers 3- and 5-voter scenarios for partitions, crashes, pauses with skew, chaos and TTL under skew', () => {
    expect(matchScenarios('coord-*').map((s) => s.name)).toEqual([
      'coord-3-clock-behind',
      'coord-3-crash',
      'coord-3-lease-reads',
      'coord-3-partition',
      'coord-3-pause-skew',
      'coord-3-ttl-outage',
      'coord-3-ttl-skew',
      'coord-5-chaos',
      'coord-5-deposed-leader',
      'coord-5-figure8',
      'coord-5-hot-cas',
      'coord-5-hot-cas-stale-leader',
      'coord-5-lease-drift',
      'coord-5-lease-reads',
      'coord-5-partition',
      'coord-5-stale-lease-reads',
      'coord-5-stale-reads',
      'coord-5-ttl-clock-behind',
      'coord-5-ttl-skew',
    ]);
  });

  it(`every coord-* scenario: ${CI_SEEDS} seeds, no violation, no liveness failure, histories checked`, async () => {
    const scenarios = matchScenarios('coord-*');
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    // New leaders with clocks behind stamp commands behind state-machine time, which must not go back.
    const behind = perScenario.filter((s) => s.scenario.includes('clock-behind'));
    for (const s of behind) expect(s.metrics['guard.stampBehindStateMachineTime']).toBeGreaterThan(0);
    // Reads skip the log through ReadIndex everywhere, and through the lease in the lease scenarios.
    for (const s of perScenario.filter((x) => !x.scenario.includes('ttl')))
      expect(s.metrics.readsServed).toBeGreaterThan(0);
    // The scripted Figure 8 reaches its last step, so the §5.4.2 guard is exercised in coord-*;
    // the deposed leader of coord-5-stale-reads resumes believing it leads, after its successor committed.
    // coord-3-ttl-outage: whole-cluster outages happened, and TTL rounds were judged early and late.
    const outage = perScenario.find((s) => s.scenario === 'coord-3-ttl-outage');
    expect(outage?.metrics.outages).toBeGreaterThan(0);
    expect(outage?.metrics.ttlChecksEarly).toBeGreaterThan(0);
    const figure8 = perScenario.find((s) => s.scenario === 'coord-5-figure8');
    expect(figure8?.metrics.figure8Reached).toBe(CI_SEEDS);
    expect(figure8?.metrics['guard.oldTermCommitByCount']).toBeGreaterThan(0);
    const stale = perScenario.find((s) => s.scenario === 'coord-5-stale-reads');
    expect(stale?.metrics.staleLeaderWindows).toBeGreaterThan(0);
    expect(stale?.metrics['guard.readsAtDeposedLeader']).toBeGreaterThan(0);
    // coord-5-lease-drift: a slow leader cut off while a successor commits, its clients still reading there.
    const drift = perScenario.find((s) => s.scenario === 'coord-5-lease-drift');
    expect(drift?.metrics.leaseDriftDeposedWindows).toBeGreaterThan(0);
    expect(drift?.metrics['guard.readsAtDeposedLeader']).toBeGreaterThan(0);
    for (const s of perScenario.filter((x) => x.scenario.includes('lease-'))) {
      expect(s.metrics['guard.leaseReadsServed']).toBeGreaterThan(0);
    }
    for (const s of perScenario) {
      expect(s.convergenceMs).toHaveLength(CI_SEEDS);
      // The checkers saw real work, and never gave up on a history.
      expect(s.metrics.linearizabilityUnknown).toBe(0);
      if (s.scenario.includes('ttl')) {
        expect(s.metrics.ttlRounds).toBeGreaterThan(0);
        expect(s.metrics.ttlChecksEarly).toBeGreaterThan(0);
      } else {
        expect(s.metrics.linearizabilityOps).toBeGreaterThan(50);
        // The hot-cas clients CAS one key (no fences): leaders fail doomed CASes with no log entry,
        // held ones behind a write that superseded their version too.
        if (s.scenario.includes('hot-cas')) {
          expect(s.metrics['guard.casFailedFast']).toBeGreaterThan(0);
          expect(s.metrics['guard.casHeldSuperseded']).toBeGreaterThan(0);
        } else expect(s.metrics.fenceEvents).toBeGreaterThan(0);
        expect(s.metrics.durabilityChecked).toBeGreaterThan(0);
      }
    }
  }, 120_000);
});
