/**
 * Sweeps: many scenarios × many seeds, summarized the way the runner and
 * CI report them.
 */
import { type RunResult, runScenario, type Scenario } from './scenario.js';
import type { FailureKind } from './simulation.js';

export interface SweepFailure {
  scenario: string;
  seed: number;
  kind: FailureKind;
  message: string;
}

/** The runner's `--json` shape. */
export interface SweepSummary {
  scenarios: number;
  seeds: number;
  /** Correctness violations and crashes. */
  violations: number;
  livenessFailures: number;
  failures: SweepFailure[];
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
  /** Called after every run (progress bars). */
  onResult?: (result: RunResult, done: number, total: number) => void;
}

export async function runSweep(options: SweepOptions): Promise<SweepResult> {
  const { scenarios, firstSeed, seeds } = options;
  const summary: SweepSummary = {
    scenarios: scenarios.length,
    seeds,
    violations: 0,
    livenessFailures: 0,
    failures: [],
  };
  const perScenario: ScenarioStats[] = [];
  const total = scenarios.length * seeds;
  let done = 0;
  for (const scenario of scenarios) {
    const stats: ScenarioStats = {
      scenario: scenario.name,
      description: scenario.description,
      runs: 0,
      failures: 0,
      convergenceMs: [],
      simulatedMs: 0,
      steps: 0,
      metrics: {},
    };
    perScenario.push(stats);
    for (let i = 0; i < seeds; i++) {
      const result = await runScenario(scenario, firstSeed + i);
      stats.runs++;
      stats.simulatedMs += result.simulatedMs;
      stats.steps += result.steps;
      for (const [k, v] of Object.entries(result.metrics)) stats.metrics[k] = (stats.metrics[k] ?? 0) + v;
      if (result.failure) {
        stats.failures++;
        if (result.failure.kind === 'liveness') summary.livenessFailures++;
        else summary.violations++;
        summary.failures.push({
          scenario: scenario.name,
          seed: result.seed,
          kind: result.failure.kind,
          message: result.failure.message,
        });
      } else if (result.convergenceMs !== undefined) {
        stats.convergenceMs.push(result.convergenceMs);
      }
      done++;
      options.onResult?.(result, done, total);
    }
  }
  return { summary, perScenario, firstSeed };
}

/** The runner's one-line summary. */
export function summaryLine(s: SweepSummary): string {
  return `scenarios: ${s.scenarios}, seeds: ${s.seeds}, violations: ${s.violations}, liveness failures: ${s.livenessFailures}`;
}

/** Value at quantile `q` (0..1) of an ascending array (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}
