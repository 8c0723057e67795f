/**
 * Sweeps: many scenarios × many seeds, summarized the way the runner and
 * CI report them.
 */
import { Worker } from 'node:worker_threads';
import { CheckerSelfTestError, KNOWN_BAD, type KnownBadCase, runKnownBad } from '@parley/check';
import type { FailureKind } from '@parley/sim';
import { type RunResult, runScenario, type Scenario } from './registry.js';
import type { SweepTask } from './sweep-worker.js';

export interface SweepFailure {
  scenario: string;
  seed: number;
  kind: FailureKind;
  message: string;
}

/** A run none of whose checks failed, but some of which ended `unknown`. */
export interface SweepInconclusive {
  scenario: string;
  seed: number;
  checks: string[];
}

/**
 * A rarely-hit guard (a `guard.<name>` metric): how many runs reported it and
 * how many of them exercised it (metric > 0). A guard no run exercised is
 * flagged: the sweep cannot tell whether that guard works.
 */
export interface GuardCoverage {
  guard: string;
  reported: number;
  exercised: number;
}

/** The runner's `--json` shape. */
export interface SweepSummary {
  scenarios: number;
  seeds: number;
  /** Correctness violations and crashes. */
  violations: number;
  livenessFailures: number;
  /** Checks that ended `unknown` (over every run): a sweep with any is not a pass. */
  unknownChecks: number;
  failures: SweepFailure[];
  inconclusive: SweepInconclusive[];
  /** Per `guard.*` metric, sorted by name. */
  guards: GuardCoverage[];
  /** Guards that no run of the sweep exercised. */
  unexercisedGuards: string[];
}

export interface ScenarioStats {
  scenario: string;
  description: string;
  runs: number;
  failures: number;
  /** Convergence times (simulated ms) of the passing runs, in seed order. */
  convergenceMs: number[];
  simulatedMs: number;
  steps: number;
  /** Sums of each metric over the runs. */
  metrics: Record<string, number>;
}

export interface SweepResult {
  summary: SweepSummary;
  perScenario: ScenarioStats[];
  firstSeed: number;
}

export interface SweepOptions {
  scenarios: readonly Scenario[];
  firstSeed: number;
  seeds: number;
  /**
   * Worker threads to run on (default 1: in this thread). Above 1, scenarios
   * must be registered by `scenarios/index.js` (workers import it) and the
   * package must run from its compiled `dist/`.
   */
  jobs?: number;
  /** Called after every run (progress bars), in completion order. */
  onResult?: (result: RunResult, done: number, total: number) => void;
  /** Known-bad histories every checker must refuse before the sweep starts. Default `KNOWN_BAD`. */
  knownBad?: readonly KnownBadCase[];
}

/**
 * Runs every scenario on seeds `firstSeed..firstSeed+seeds−1`. First feeds the
 * checkers known-bad histories and throws `CheckerSelfTestError` (running
 * nothing) if one accepts.
 */
export async function runSweep(options: SweepOptions): Promise<SweepResult> {
  const { scenarios, firstSeed, seeds } = options;
  const accepted = runKnownBad(options.knownBad ?? KNOWN_BAD);
  if (accepted.length > 0) throw new CheckerSelfTestError(accepted);
  const tasks: SweepTask[] = [];
  for (const scenario of scenarios) {
    for (let i = 0; i < seeds; i++) tasks.push({ index: tasks.length, scenario: scenario.name, seed: firstSeed + i });
  }
  const results: RunResult[] = new Array(tasks.length);
  let done = 0;
  const record = (index: number, result: RunResult) => {
    results[index] = result;
    done++;
    options.onResult?.(result, done, tasks.length);
  };
  const jobs = Math.max(1, Math.min(options.jobs ?? 1, tasks.length));
  if (jobs === 1) {
    const byName = new Map(scenarios.map((s) => [s.name, s]));
    for (const task of tasks) record(task.index, await runScenario(byName.get(task.scenario)!, task.seed));
  } else {
    await runInWorkers(tasks, jobs, record);
  }
  return summarize(scenarios, firstSeed, seeds, results);
}

async function runInWorkers(
  tasks: readonly SweepTask[],
  jobs: number,
  record: (index: number, result: RunResult) => void,
): Promise<void> {
  let next = 0;
  const url = new URL('./sweep-worker.js', import.meta.url);
  await Promise.all(
    Array.from(
      { length: jobs },
      () =>
        new Promise<void>((resolve, reject) => {
          const worker = new Worker(url);
          const feed = () => worker.postMessage(next < tasks.length ? tasks[next++] : null);
          worker.on('message', (msg: { index: number; result: RunResult }) => {
            record(msg.index, msg.result);
            feed();
          });
          worker.on('error', reject);
          worker.on('exit', () => resolve());
          feed();
        }),
    ),
  );
}

/** Aggregates results in (scenario, seed) order, whatever order they finished in. */
function summarize(
  scenarios: readonly Scenario[],
  firstSeed: number,
  seeds: number,
  results: readonly RunResult[],
): SweepResult {
  const summary: SweepSummary = {
    scenarios: scenarios.length,
    seeds,
    violations: 0,
    livenessFailures: 0,
    unknownChecks: 0,
    failures: [],
    inconclusive: [],
    guards: [],
    unexercisedGuards: [],
  };
  const guards = new Map<string, GuardCoverage>();
  const perScenario: ScenarioStats[] = scenarios.map((s) => ({
    scenario: s.name,
    description: s.description,
    runs: 0,
    failures: 0,
    convergenceMs: [],
    simulatedMs: 0,
    steps: 0,
    metrics: {},
  }));
  results.forEach((result, i) => {
    const stats = perScenario[Math.floor(i / seeds)]!;
    stats.runs++;
    stats.simulatedMs += result.simulatedMs;
    stats.steps += result.steps;
    for (const [k, v] of Object.entries(result.metrics)) {
      stats.metrics[k] = (stats.metrics[k] ?? 0) + v;
      if (!k.startsWith(GUARD_PREFIX)) continue;
      const name = k.slice(GUARD_PREFIX.length);
      let g = guards.get(name);
      if (g === undefined) guards.set(name, (g = { guard: name, reported: 0, exercised: 0 }));
      g.reported++;
      if (v > 0) g.exercised++;
    }
    if (result.failure) {
      stats.failures++;
      if (result.failure.kind === 'liveness') summary.livenessFailures++;
      else summary.violations++;
      summary.failures.push({
        scenario: result.scenario,
        seed: result.seed,
        kind: result.failure.kind,
        message: result.failure.message,
      });
    } else if (result.convergenceMs !== undefined) {
      stats.convergenceMs.push(result.convergenceMs);
    }
    if (result.inconclusive.length > 0) {
      summary.unknownChecks += result.inconclusive.length;
      summary.inconclusive.push({ scenario: result.scenario, seed: result.seed, checks: result.inconclusive });
    }
  });
  summary.guards = [...guards.values()].sort((a, b) => (a.guard < b.guard ? -1 : a.guard > b.guard ? 1 : 0));
  summary.unexercisedGuards = summary.guards.filter((g) => g.exercised === 0).map((g) => g.guard);
  return { summary, perScenario, firstSeed };
}

/** Metrics named `guard.<name>` count how often a run reached a rarely-hit guard. */
export const GUARD_PREFIX = 'guard.';

/** One line per guard: `guard <name>: exercised in E of R runs`, flagged when E is 0. */
export function guardLines(s: SweepSummary): string[] {
  return s.guards.map(
    (g) =>
      `guard ${g.guard}: exercised in ${g.exercised} of ${g.reported} runs${g.exercised === 0 ? ' — NOT EXERCISED by any scenario of this sweep' : ''}`,
  );
}

/** The runner's one-line summary. */
export function summaryLine(s: SweepSummary): string {
  return `scenarios: ${s.scenarios}, seeds: ${s.seeds}, violations: ${s.violations}, liveness failures: ${s.livenessFailures}, unknown checks: ${s.unknownChecks}`;
}

/** A sweep passes when no run failed and no check ended `unknown`. */
export function sweepPassed(s: SweepSummary): boolean {
  return s.violations === 0 && s.livenessFailures === 0 && s.unknownChecks === 0;
}

/** Value at quantile `q` (0..1) of an ascending array (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}
