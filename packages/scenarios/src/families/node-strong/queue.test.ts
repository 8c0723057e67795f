import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized queue sweep (the full one: `npm run sim -- --scenario 'queue-*' --seeds 200`). */
const CI_SEEDS = 1;
const FIRST_SEED = 1;

describe('queue-strong CI sweep', () => {
  it(`every task done exactly once by its last attempt, none stranded: ${CI_SEEDS} seeds`, async () => {
    const scenarios = matchScenarios('queue-*');
    expect(scenarios.map((s) => s.name)).toEqual(['queue-strong']);
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    for (const s of perScenario) {
      expect(s.metrics.tasksChecked).toBe(40 * CI_SEEDS); // summed over the seeds
      expect(s.metrics.crashed).toBeGreaterThan(0);
      expect(s.metrics.paused).toBeGreaterThan(0);
    }
  }, 120_000);
});
