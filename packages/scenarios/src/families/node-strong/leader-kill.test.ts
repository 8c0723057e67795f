import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized sweep of the leader-kill scenario (the full sweep is `npm run sim`). */
const FIRST_SEED = 42_000;

describe('node-strong-3-leader-kill CI sweep', () => {
  it('one seed: histories linearizable, every failover well inside one election timeout (1 s)', async () => {
    const scenarios = matchScenarios('node-strong-3-leader-kill');
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: 1 });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => `${f.scenario}: ${f.message}`)).toEqual([]);
    const [s] = perScenario;
    expect(s?.metrics.leaderKills).toBeGreaterThan(1);
    expect(s?.metrics.linearizabilityOps).toBeGreaterThan(20);
    expect(s?.metrics.failoverMsMax).toBeLessThan(1_000);
  }, 120_000);
});
