/**
 * Scenarios and runs. A scenario builds a world on a `Simulation`, runs a
 * workload with faults on (the safety phase, invariants checked after every
 * event), then turns every fault off and requires the connected core to
 * converge within a stated bound (the liveness phase), then runs its final
 * checks. A run fails as `correctness` (an invariant or check broke),
 * `liveness` (no convergence within the bound) or `crash` (simulated code
 * threw).
 */
import { InvariantViolationError } from '@parley/check';
import { type FailureKind, Simulation, SimulationFailure } from '@parley/sim';

export interface Scenario {
  /** `<family>-<variant>`, e.g. `crdt-partition`. Families: `crdt`, `raft`, `coord`. */
  readonly name: string;
  readonly description: string;
  /** Length of the safety phase (faults on), in simulated ms. */
  readonly safetyMs: number;
  /** After faults stop, the core must converge within this many simulated ms. */
  readonly livenessBoundMs: number;
  /** Builds the hosts, starts the workload and schedules the faults. */
  setup(sim: Simulation): ScenarioRun | Promise<ScenarioRun>;
}

export interface ScenarioRun {
  /** End of the safety phase: stop the workload and the scenario's own fault schedule. */
  quiesce(): void | Promise<void>;
  /** Liveness goal, checked after every event once faults are off. */
  converged(): boolean;
  /** Final checks after convergence; throw `violation(...)` (an `InvariantViolationError`) on a correctness failure. */
  check(): void | Promise<void>;
  /** Figures for the report (operations, faults injected, ...). Deterministic. */
  metrics?(): Record<string, number>;
  /**
   * Why the liveness goal is not met, by name (e.g. "leader n1 believes follower n3 has
   * 17, follower's disk has 15"), appended to a liveness failure's message.
   */
  livenessDetail?(): string | undefined;
  /**
   * Checks that ended neither passed nor failed (a linearizability search that
   * hit its step budget: `unknown`), one line each. Asked after `check()`. A run
   * with any is not a pass: the runner counts it and exits non-zero.
   */
  inconclusive?(): string[];
}

export interface RunOptions {
  /** Keep the simulation's trace lines in the result. */
  captureTrace?: boolean;
}

export interface RunResult {
  scenario: string;
  seed: number;
  failure: { kind: FailureKind; message: string } | undefined;
  /** Simulated ms from the end of the safety phase to convergence (undefined if it failed first). */
  convergenceMs: number | undefined;
  simulatedMs: number;
  steps: number;
  /** Hash of the whole trace: equal seeds give equal fingerprints. */
  fingerprint: string;
  metrics: Record<string, number>;
  /** Checks that ended `unknown` (see `ScenarioRun.inconclusive`). */
  inconclusive: string[];
  trace: readonly string[];
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Runs one scenario on one seed: safety phase, liveness phase, final checks. */
export async function runScenario(scenario: Scenario, seed: number, options: RunOptions = {}): Promise<RunResult> {
  const sim = new Simulation({ seed, captureTrace: options.captureTrace ?? false });
  let run: ScenarioRun | undefined;
  let convergenceMs: number | undefined;
  try {
    run = await scenario.setup(sim);
    await sim.runFor(scenario.safetyMs);
    if (!sim.failure) {
      sim.trace('phase liveness');
      await run.quiesce();
      sim.calm();
      const start = sim.nowMs();
      const ok = await sim.runUntil(() => run!.converged(), scenario.livenessBoundMs);
      if (!sim.failure && !ok) {
        let detail: string | undefined;
        try {
          detail = run.livenessDetail?.();
        } catch (err) {
          detail = `livenessDetail threw: ${describe(err)}`;
        }
        sim.fail(
          'liveness',
          `${scenario.name} did not converge within ${scenario.livenessBoundMs} ms after healing${detail ? `: ${detail}` : ''}`,
        );
      }
      if (!sim.failure) {
        convergenceMs = sim.nowMs() - start;
        try {
          await run.check();
        } catch (err) {
          sim.fail(err instanceof InvariantViolationError ? 'correctness' : 'crash', describe(err));
        }
      }
    }
  } catch (err) {
    sim.fail(err instanceof InvariantViolationError ? 'correctness' : 'crash', describe(err));
  }
  const failure = sim.failure;
  let metrics: Record<string, number> = {};
  try {
    metrics = run?.metrics?.() ?? {};
  } catch {
    metrics = {};
  }
  let inconclusive: string[] = [];
  try {
    inconclusive = run?.inconclusive?.() ?? [];
  } catch (err) {
    inconclusive = [`inconclusive() threw: ${describe(err)}`];
  }
  return {
    scenario: scenario.name,
    seed,
    failure: failure ? { kind: failure.kind, message: failure.message } : undefined,
    convergenceMs: failure ? undefined : convergenceMs,
    simulatedMs: sim.nowMs(),
    steps: sim.steps,
    fingerprint: sim.fingerprint(),
    metrics,
    inconclusive,
    trace: sim.traceLines(),
  };
}

/** Throws the run's failure as a `SimulationFailure` (for tests). */
export function assertPassed(result: RunResult): void {
  if (result.failure) {
    throw new SimulationFailure(result.failure.kind, result.seed, result.simulatedMs, result.failure.message);
  }
}

// --- registry ---------------------------------------------------------------

const registry = new Map<string, Scenario>();

/** Adds a scenario to the registry (scenario modules call it when imported). */
export function registerScenario(scenario: Scenario): void {
  if (!/^[a-z]+-[a-z0-9-]+$/.test(scenario.name)) {
    throw new RangeError(`scenario name '${scenario.name}' must be <family>-<variant> in lowercase`);
  }
  if (registry.has(scenario.name)) throw new RangeError(`scenario '${scenario.name}' is registered twice`);
  registry.set(scenario.name, scenario);
}

/** Every registered scenario, sorted by name. */
export function listScenarios(): Scenario[] {
  return [...registry.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Scenarios whose name matches any of the comma-separated globs (`*`, `?`). */
export function matchScenarios(patterns: string): Scenario[] {
  const res = patterns
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map(
      (p) =>
        new RegExp(
          `^${p
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '.*')
            .replace(/\?/g, '.')}$`,
        ),
    );
  return listScenarios().filter((s) => res.some((re) => re.test(s.name)));
}
