import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized watch sweep (the full one: `npm run sim -- --scenario 'watch-*' --seeds 1000`). */
const CI_SEEDS = 3;
const FIRST_SEED = 70_000;

describe('watch-strong-* CI sweep', () => {
  it(`every watch path sees exactly the applied changes or ends with compacted: ${CI_SEEDS} seeds each`, async () => {
    const scenarios = matchScenarios('watch-strong*');
    expect(scenarios.map((s) => s.name)).toEqual(['watch-strong', 'watch-strong-compaction']);
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    for (const s of perScenario) console.log(s.scenario, JSON.stringify(s.metrics));
  }, 120_000);
});
