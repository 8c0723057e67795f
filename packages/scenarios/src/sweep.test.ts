import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CheckerSelfTestError,
  checkLinearizability,
  HistoryRecorder,
  KNOWN_BAD,
  type Model,
  parleyLeaseModel,
  registerModel,
} from '@parley/check';
import { describe, expect, it } from 'vitest';
import { main } from './cli.js';
import { matchScenarios, registerScenario, runScenario, type Scenario } from './registry.js';
import './families/index.js';
import { violation } from '@parley/sim';
import { guardLines, runSweep, summaryLine } from './sweep.js';

/** The CI-sized sweep: every crdt-* scenario on a fixed block of seeds. */
const CI_SEEDS = 20;
const FIRST_SEED = 10_000;

describe('CI sweep', () => {
  for (const scenario of matchScenarios('crdt-*')) {
    it(`${scenario.name}: ${CI_SEEDS} seeds, no violation, no liveness failure`, async () => {
      const { summary, perScenario } = await runSweep({
        scenarios: [scenario],
        firstSeed: FIRST_SEED,
        seeds: CI_SEEDS,
      });
      // A failure's message carries PARLEY_SEED=<n>; `npm run sim -- --scenario <name> --seed <n>` replays it.
      expect(summary.failures.map((f) => f.message)).toEqual([]);
      expect(perScenario[0]!.convergenceMs).toHaveLength(CI_SEEDS);
      expect(perScenario[0]!.metrics.acked).toBeGreaterThan(0);
      // The scenarios built for a rarely-hit guard reach it.
      if (scenario.name === 'crdt-gc') expect(perScenario[0]!.metrics['guard.gcRemovals']).toBeGreaterThan(0);
      if (scenario.name === 'crdt-ties') expect(perScenario[0]!.metrics['guard.hlcTies']).toBeGreaterThan(0);
    });
  }

  it('registers the crdt family with at least one scenario per fault class', () => {
    const names = matchScenarios('crdt-*').map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining(['crdt-lossy', 'crdt-partition', 'crdt-crash', 'crdt-pause-skew', 'crdt-gc', 'crdt-ties']),
    );
    expect(matchScenarios('crdt-crash,crdt-l*').map((s) => s.name)).toEqual(['crdt-crash', 'crdt-lossy']);
  });
});

/** A grow-only set replicated by gossip alone, with knobs to break it. */
function gsetScenario(name: string, bug: 'none' | 'never-converge' | 'wrong-read' | 'throw'): Scenario {
  return {
    name,
    description: 'test scenario',
    safetyMs: 500,
    livenessBoundMs: 1_000,
    setup(sim) {
      const sets = new Map<string, Set<number>>();
      for (const id of ['a', 'b', 'c']) {
        const mine = new Set<number>();
        sets.set(id, mine);
        sim.addHost(id, async (ctx) => {
          ctx.transport.subscribe('add', (_from, m) => {
            if (bug !== 'never-converge') mine.add(m[0]!);
          });
          await ctx.transport.start();
          ctx.scheduler.after(50, () => {
            const v = ctx.random.int(200);
            mine.add(v);
            void ctx.transport.publish('add', new Uint8Array([v]));
            if (bug === 'throw') throw new Error('assertion failed in host code');
          });
        });
      }
      if (bug === 'wrong-read') {
        sim.invariant('gset/bounded', () => {
          if (sim.nowMs() > 52) throw violation('gset/bounded', 'a replica read a value it never saw');
        });
      }
      const all = () => [...sets.values()];
      return {
        quiesce() {},
        converged: () => all().every((s) => s.size === all()[0]!.size && s.size === 3),
        check() {},
      };
    },
  };
}

/** Passes every check, but its linearizability search runs out of steps: `unknown`. */
function undecidedScenario(): Scenario {
  return {
    name: 'test-undecided',
    description: 'test scenario whose history check ends unknown',
    safetyMs: 10,
    livenessBoundMs: 10,
    setup() {
      const rec = new HistoryRecorder();
      // Sixteen concurrent writes and a read: far more orders than a 4,096-step search can try.
      for (let p = 1; p <= 16; p++) rec.invoke(p, 'write', p);
      rec.invoke(17, 'read', null);
      for (let p = 1; p <= 16; p++) rec.ok(p, p);
      rec.ok(17, 99);
      let unknown: string[] = [];
      return {
        quiesce() {},
        converged: () => true,
        check() {
          const r = checkLinearizability(registerModel, rec.events(), { maxSteps: 4_096 });
          if (r.verdict === 'not linearizable') throw violation('test/linearizable', 'not linearizable');
          if (r.verdict === 'unknown') unknown = [`test/linearizable: unknown (${r.reason})`];
        },
        inconclusive: () => unknown,
      };
    },
  };
}

describe('runs and failures', () => {
  it('classifies correctness, liveness and crash failures and names the seed', async () => {
    expect((await runScenario(gsetScenario('test-ok', 'none'), 5)).failure).toBeUndefined();
    const live = await runScenario(gsetScenario('test-live', 'never-converge'), 5);
    expect(live.failure?.kind).toBe('liveness');
    expect(live.failure?.message).toContain('PARLEY_SEED=5');
    const wrong = await runScenario(gsetScenario('test-wrong', 'wrong-read'), 6);
    expect(wrong.failure?.kind).toBe('correctness');
    expect(wrong.failure?.message).toContain('gset/bounded');
    const crash = await runScenario(gsetScenario('test-crash', 'throw'), 7);
    expect(crash.failure?.kind).toBe('crash');
    expect(crash.failure?.message).toContain('PARLEY_SEED=7');
  });

  it('sums failures per kind and prints the summary line', async () => {
    const { summary } = await runSweep({
      scenarios: [
        gsetScenario('test-ok', 'none'),
        gsetScenario('test-live', 'never-converge'),
        gsetScenario('test-crash', 'throw'),
      ],
      firstSeed: 1,
      seeds: 2,
    });
    expect(summaryLine(summary)).toBe('scenarios: 3, seeds: 2, violations: 2, liveness failures: 2, unknown checks: 0');
    expect(summary.failures.map((f) => `${f.scenario}/${f.seed}/${f.kind}`)).toEqual([
      'test-live/1/liveness',
      'test-live/2/liveness',
      'test-crash/1/crash',
      'test-crash/2/crash',
    ]);
  });
});

describe('guard coverage', () => {
  it('counts the runs that exercised each guard and flags a guard no run exercised', async () => {
    const guarded = (name: string, hits: (seed: number) => Record<string, number>): Scenario => ({
      name,
      description: 'reports guard counters',
      safetyMs: 1,
      livenessBoundMs: 1,
      setup(sim) {
        return { quiesce() {}, converged: () => true, check() {}, metrics: () => hits(sim.seed) };
      },
    });
    const { summary } = await runSweep({
      scenarios: [
        guarded('test-a', (seed) => ({ 'guard.often': 3, 'guard.never': 0, 'guard.odd': seed % 2, other: 1 })),
        guarded('test-b', () => ({ 'guard.never': 0 })),
      ],
      firstSeed: 1,
      seeds: 4,
    });
    expect(summary.guards).toEqual([
      { guard: 'never', reported: 8, exercised: 0 },
      { guard: 'odd', reported: 4, exercised: 2 },
      { guard: 'often', reported: 4, exercised: 4 },
    ]);
    expect(summary.unexercisedGuards).toEqual(['never']);
    expect(guardLines(summary)[0]).toBe(
      'guard never: exercised in 0 of 8 runs — NOT EXERCISED by any scenario of this sweep',
    );
  });
});

describe('parley-sim CLI', () => {
  it('runs a sweep, writes the JSON summary and the report, exits 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-sim-'));
    try {
      const out: string[] = [];
      const code = await main(
        [
          '--scenario',
          'crdt-crash',
          '--seeds',
          '2',
          '--seed',
          '40',
          '--jobs',
          '1',
          '--json',
          join(dir, 's.json'),
          '--report-dir',
          dir,
        ],
        { stdout: (t) => out.push(t), stderr: (t) => out.push(t), isTTY: false },
      );
      expect(code).toBe(0);
      expect(out[0]).toBe('scenarios: 1, seeds: 2, violations: 0, liveness failures: 0, unknown checks: 0\n');
      const json = JSON.parse(await readFile(join(dir, 's.json'), 'utf8'));
      expect(json).toEqual({
        scenarios: 1,
        seeds: 2,
        violations: 0,
        livenessFailures: 0,
        unknownChecks: 0,
        failures: [],
        inconclusive: [],
        guards: expect.any(Array),
        unexercisedGuards: expect.any(Array),
      });
      expect(json.guards.map((g: { guard: string }) => g.guard)).toEqual(['gcRemovals', 'hlcTies']);
      const md = await readFile(join(dir, 'sim-crdt-crash.md'), 'utf8');
      expect(md).toContain('| crdt-crash | 2 | 0 |');
      expect(await readFile(join(dir, 'sim-crdt-crash.svg'), 'utf8')).toContain('<svg');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exits 1 when a check ended unknown, and names the run', async () => {
    registerScenario(undecidedScenario());
    const out: string[] = [];
    const code = await main(['--scenario', 'test-undecided', '--seeds', '1', '--jobs', '1', '--no-report'], {
      stdout: (t) => out.push(t),
      stderr: (t) => out.push(t),
      isTTY: false,
    });
    expect(code).toBe(1);
    expect(out[0]).toBe('scenarios: 1, seeds: 1, violations: 0, liveness failures: 0, unknown checks: 1\n');
    expect(out.join('')).toContain('unknown test-undecided seed 1: test/linearizable: unknown (max-steps)');
  });

  it('exits 2 on an unknown scenario or a bad option', async () => {
    const io = { stdout: () => {}, stderr: () => {}, isTTY: false };
    expect(await main(['--scenario', 'nope-*', '--no-report'], io)).toBe(2);
    expect(await main(['--seeds', 'many'], io)).toBe(2);
  });
});

describe('checker self-test before a sweep', () => {
  const noop: Scenario = {
    name: 'test-noop',
    description: 'nothing',
    safetyMs: 1,
    livenessBoundMs: 1,
    setup: () => ({ quiesce() {}, converged: () => true, check() {} }),
  };

  /** The lease model with its step made permissive: the checker bug the self-test exists to catch. */
  const permissiveLease = { ...parleyLeaseModel, step: (s: unknown) => s } as unknown as Model<
    unknown,
    unknown,
    unknown
  >;

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
});
