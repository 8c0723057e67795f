import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized sweep of the strong session scenario (the full sweep is `npm run sim`). */
const CI_SEEDS = 2;
const FIRST_SEED = 42_000;

describe('node-strong-3-session-reads CI sweep', () => {
  it(`${CI_SEEDS} seeds: read-your-writes, monotonic reads and writes, writes-follow-reads`, async () => {
    const scenarios = matchScenarios('node-strong-3-session-reads');
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    const [s] = perScenario;
    expect(s?.metrics.serializable).toBeGreaterThan(20 * CI_SEEDS);
    expect(s?.metrics.bounded).toBeGreaterThan(20 * CI_SEEDS);
    expect(s?.metrics.checkedReads).toBeGreaterThan(40 * CI_SEEDS);
    expect(s?.metrics.tokenMoves).toBeGreaterThan(20 * CI_SEEDS);
    expect(s?.metrics.resumed).toBeGreaterThan(0);
  }, 120_000);
});
