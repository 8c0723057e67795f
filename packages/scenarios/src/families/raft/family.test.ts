import { describe, expect, it } from 'vitest';
import { matchScenarios } from '../../registry.js';
import { runSweep } from '../../sweep.js';
import '../index.js';

/** The CI-sized raft sweep: every raft-* scenario on a fixed block of seeds (the full sweep is `npm run sim`). */
const CI_SEEDS = 3;
const FIRST_SEED = 20_000;

describe('raft-* CI sweep', () => {
  it('registers 3- and 5-voter scenarios for partitions, loss, crashes, pauses, membership and snapshots', () => {
    const names = matchScenarios('raft-*').map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'raft-3-partition',
        'raft-5-partition',
        'raft-3-lossy',
        'raft-5-lossy',
        'raft-3-crash',
        'raft-5-crash',
        'raft-3-pause',
        'raft-5-pause',
        'raft-3-membership',
        'raft-3-snapshot',
        'raft-5-chaos',
        'raft-5-figure8',
        'raft-5-figure8-random',
        'raft-5-leader-churn',
      ]),
    );
  });

  it(`every raft-* scenario: ${CI_SEEDS} seeds, no violation, no liveness failure`, async () => {
    const scenarios = matchScenarios('raft-*');
    const { summary, perScenario } = await runSweep({ scenarios, firstSeed: FIRST_SEED, seeds: CI_SEEDS });
    // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
    expect(summary.failures.map((f) => f.message)).toEqual([]);
    for (const s of perScenario) expect(s.convergenceMs).toHaveLength(CI_SEEDS);
    // The Figure 8 script reaches its last step (an old-term entry on a majority, committed) on every seed.
    expect(perScenario.find((s) => s.scenario === 'raft-5-figure8')?.metrics.figure8Reached).toBe(CI_SEEDS);
    // Some run reached the state the §5.4.2 commit rule guards.
    expect(perScenario.reduce((n, s) => n + (s.metrics['guard.oldTermCommitByCount'] ?? 0), 0)).toBeGreaterThan(0);
    // ...and the leader-reactive nemesis reaches it without a script.
    expect(
      perScenario.find((s) => s.scenario === 'raft-5-figure8-random')?.metrics['guard.oldTermCommitByCount'],
    ).toBeGreaterThan(0);
  });
});
