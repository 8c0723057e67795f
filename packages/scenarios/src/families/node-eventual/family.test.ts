import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized node-eventual sweep (the recorded one is `npm run sim -- --scenario 'node-eventual-*' --seeds 1000`). */
const CI_SEEDS = 2;
const FIRST_SEED = 30_000;

describe('node-eventual-* CI sweep', () => {
  it(`every node-eventual-* scenario: ${CI_SEEDS} seeds, no violation, no liveness failure`, async () => {
    const scenarios = matchScenarios('node-eventual-*').filter((s) => s.name !== 'node-eventual-5-sessions');
    expect(scenarios.map((s) => s.name)).toEqual([
      'node-eventual-chaos',
      'node-eventual-crash',
      'node-eventual-early-gossip',
      'node-eventual-isolated-crash',
      'node-eventual-offline-ttl',
      'node-eventual-partition',
    ]);
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    expect(summary.failures.map((f) => f.message)).toEqual([]);
    for (const s of perScenario) expect(s.convergenceMs).toHaveLength(CI_SEEDS);
    // The node offline past the grace period comes back under a new replica id on every seed.
    expect(perScenario.find((s) => s.scenario === 'node-eventual-offline-ttl')?.metrics['guard.incarnation']).toBe(
      CI_SEEDS,
    );
    // Every early-gossip seed crashes nodes mid-write and brings them back under a new replica id.
    expect(
      perScenario.find((s) => s.scenario === 'node-eventual-early-gossip')?.metrics['guard.writerRotation'],
    ).toBeGreaterThan(0);
  });
});
