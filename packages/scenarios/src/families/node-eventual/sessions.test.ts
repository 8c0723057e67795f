import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized sweep (the recorded one is `npm run sim -- --scenario node-eventual-5-sessions --seeds 1000`). */
const CI_SEEDS = 4;
const FIRST_SEED = 50_000;

describe('node-eventual-5-sessions CI sweep', () => {
  it(`${CI_SEEDS} seeds: causal sessions, causal observer snapshots, convergence`, async () => {
    const scenarios = matchScenarios('node-eventual-5-sessions');
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => f.message)).toEqual([]);
    const [s] = perScenario;
    expect(s?.convergenceMs).toHaveLength(CI_SEEDS);
    expect(s?.metrics.writes).toBeGreaterThan(20 * CI_SEEDS);
    expect(s?.metrics.snapshotChecks).toBeGreaterThan(0);
  }, 60_000);
});
