import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized sweep of the session scenarios (the full sweep is `npm run sim`). */
const CI_SEEDS = 2;
const FIRST_SEED = 40_000;

describe('node-strong-3-lost-answers and -forgotten-results CI sweep', () => {
  it(`${CI_SEEDS} seeds each: no call executed twice, every answer its execution's`, async () => {
    const scenarios = matchScenarios('node-strong-3-lost-answers,node-strong-3-forgotten-results');
    expect(scenarios.map((s) => s.name)).toEqual(['node-strong-3-forgotten-results', 'node-strong-3-lost-answers']);
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    const [forgotten, lost] = perScenario;
    for (const s of perScenario) {
      expect(s.convergenceMs).toHaveLength(CI_SEEDS);
      expect(s.metrics.answersCompared).toBeGreaterThan(100 * CI_SEEDS);
      expect(s.metrics.retries).toBeGreaterThan(0);
      expect(s.metrics.bursts).toBeGreaterThan(0);
    }
    // Default limits: every retry found its answer. A 4 KiB result bound: some did not, and said so.
    expect(lost?.metrics.outcomeUnknown).toBe(0);
    expect(forgotten?.metrics.outcomeUnknown).toBeGreaterThan(0);
  }, 120_000);
});

describe('node-strong-3-fail-fast CI sweep', () => {
  it(`${CI_SEEDS} seeds: calls fail fast under partitions, and none answered unavailable applies`, async () => {
    const scenarios = matchScenarios('node-strong-3-fail-fast');
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    const [s] = perScenario;
    expect(s?.metrics.partitions).toBeGreaterThan(0);
    expect(s?.metrics.unavailable).toBeGreaterThan(0);
    expect(s?.metrics.answersCompared).toBeGreaterThan(50 * CI_SEEDS);
  }, 120_000);
});
