import { describe, expect, it } from 'vitest';
import { HistoryRecorder } from './check/history.js';
import { checkLinearizability } from './check/linearizability.js';
import type { Model } from './check/model.js';
import { parleyLeaseModel } from './check/parley-models.js';
import { CheckerSelfTestError, KNOWN_BAD, runKnownBad } from './known-bad.js';
import type { Scenario } from './scenario.js';
import { runSweep } from './sweep.js';

const noop: Scenario = {
  name: 'test-noop',
  description: 'nothing',
  safetyMs: 1,
  livenessBoundMs: 1,
  setup: () => ({ quiesce() {}, converged: () => true, check() {} }),
};

/** The lease model with its step made permissive: the checker bug the self-test exists to catch. */
const permissiveLease = { ...parleyLeaseModel, step: (s: unknown) => s } as unknown as Model<unknown, unknown, unknown>;

describe('checker self-test', () => {
  it('every checker refuses every known-bad history', () => {
    expect(KNOWN_BAD.length).toBeGreaterThanOrEqual(8);
    expect(runKnownBad()).toEqual([]);
  });

  it('a sweep refuses to run when a checker accepts a known-bad history', async () => {
    let ran = 0;
    const counting: Scenario = {
      ...noop,
      setup: () => {
        ran++;
        return noop.setup(undefined as never);
      },
    };
    const broken = {
      name: 'parley-lease (permissive): two holders of one epoch',
      accepts: () => {
        const r = new HistoryRecorder();
        r.invoke('a', 'acquire', { holder: 'a' }, 'l');
        r.ok('a', { epoch: 1 });
        r.invoke('b', 'acquire', { holder: 'b' }, 'l');
        r.ok('b', { epoch: 1 });
        return checkLinearizability(permissiveLease, r.events()).verdict !== 'not linearizable';
      },
    };
    await expect(
      runSweep({ scenarios: [counting], firstSeed: 1, seeds: 1, knownBad: [...KNOWN_BAD, broken] }),
    ).rejects.toThrow(CheckerSelfTestError);
    expect(ran).toBe(0);
    // The same sweep with only sound checkers runs.
    await runSweep({ scenarios: [counting], firstSeed: 1, seeds: 1 });
    expect(ran).toBe(1);
  });

  it('a case that throws counts as accepted (a malformed case must not pass silently)', () => {
    expect(
      runKnownBad([
        {
          name: 'throws',
          accepts: () => {
            throw new Error('boom');
          },
        },
      ]),
    ).toEqual(['throws (threw boom)']);
  });
});
