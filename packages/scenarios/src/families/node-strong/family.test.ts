import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';
import { NODE_STRONG_LEADER_KILL_SCENARIOS } from './family.js';
import { NODE_STRONG_READS_SCENARIOS } from './reads.js';
import { NODE_STRONG_SESSION_READS_SCENARIOS } from './session-reads.js';
import { NODE_STRONG_SESSIONS_SCENARIOS } from './sessions.js';

/** The CI-sized node-strong sweep: every node-strong-* scenario on a fixed block of seeds (the full sweep is `npm run sim`). */
const CI_SEEDS = 2;
const FIRST_SEED = 40_000;
/** node-strong-* but the session, read and leader-kill scenarios (their own tests: sessions.test.ts, reads.test.ts, session-reads.test.ts, leader-kill.test.ts). */
const OWN_TESTS = [
  ...NODE_STRONG_SESSIONS_SCENARIOS,
  ...NODE_STRONG_READS_SCENARIOS,
  ...NODE_STRONG_SESSION_READS_SCENARIOS,
  ...NODE_STRONG_LEADER_KILL_SCENARIOS,
];
const nodeStrong = () => matchScenarios('node-strong-*').filter((s) => !OWN_TESTS.some((x) => x.name === s.name));

describe('node-strong-* CI sweep', () => {
  it('registers 3- and 5-voter scenarios with non-member nodes: partitions, crashes, chaos, membership', () => {
    expect(nodeStrong().map((s) => s.name)).toEqual([
      'node-strong-3-crash',
      'node-strong-3-partition',
      'node-strong-3-pipelined-locks',
      'node-strong-5-chaos',
      'node-strong-5-membership',
    ]);
  });

  it(`every node-strong-* scenario: ${CI_SEEDS} seeds, no violation, no liveness failure, histories checked`, async () => {
    const scenarios = nodeStrong();
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    for (const s of perScenario) {
      expect(s.convergenceMs).toHaveLength(CI_SEEDS);
      expect(s.metrics.linearizabilityUnknown).toBe(0);
      expect(s.metrics.linearizabilityOps).toBeGreaterThan(20);
      expect(s.metrics.callsViaOutsiders).toBeGreaterThan(0);
      expect(s.metrics.fenceEvents).toBeGreaterThan(0);
      expect(s.metrics.durabilityChecked).toBeGreaterThan(0);
    }
  }, 120_000);
});
