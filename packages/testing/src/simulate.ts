/**
 * `simulate(options, fn)`: runs `fn` against a fresh simulated cluster on
 * one seed, with the user's timers, `Date` and `performance.now` on simulated
 * time; restores the real ones however `fn` ends. A failure names its seed
 * and the one-line command that replays it.
 */
import { randomInt } from 'node:crypto';
import { InvalidArgumentError } from '@parley/interface';
import { loadDocumentEngines } from '@parley/node';
import { Simulation } from '@parley/sim';
import { SimulationExpectationError } from './checks.js';
import { SimCluster, type SimulateOptions } from './cluster.js';
import { toMs } from './duration.js';
import { timelineSvg, writeTimeline } from './timeline.js';
import { SimulatedTimers } from './timers.js';

/** Simulated time the nodes get to boot before `fn` starts. */
export const BOOT_BOUND_MS = 5_000;

export interface SimulateResult {
  seed: number;
  /** Simulated milliseconds at the end. */
  simulatedMs: number;
  /** Events the simulator ran. */
  steps: number;
  /** FNV-1a hash of every event and trace line: equal for equal seeds. */
  fingerprint: string;
  /** Every recorded call, one JSON line each. */
  history: string;
}

/** The seed of a run: `options.seed`, else PARLEY_SEED, else a fresh one. */
export function chooseSeed(explicit?: number): number {
  const env = process.env.PARLEY_SEED;
  const seed = explicit ?? (env !== undefined && env !== '' ? Number(env) : randomInt(0, 2 ** 31));
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new InvalidArgumentError(`PARLEY_SEED must be an integer ≥ 0, got ${String(env)}`);
  return seed;
}

/** `NAME=value` for a shell: the value quoted unless it is plain. */
const assignment = (name: string, value: string) =>
  `${name}=${/^[A-Za-z0-9_./:@%+-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`}`;

/** The command that reruns the current vitest test on `seed`, with the `env` variables that are set. */
export function replayCommand(seed: number, env: readonly string[] = []): string {
  const worker = (globalThis as { __vitest_worker__?: { filepath?: string; current?: { name?: string } } })
    .__vitest_worker__;
  const file = worker?.filepath ? worker.filepath.replace(`${process.cwd()}/`, '') : '<your test file>';
  const name = worker?.current?.name;
  const vars = env
    .filter((v) => v !== 'PARLEY_SEED' && process.env[v] !== undefined && process.env[v] !== '')
    .map((v) => ` ${assignment(v, process.env[v] as string)}`)
    .join('');
  return `PARLEY_SEED=${seed}${vars} npx vitest run ${file}${name ? ` -t ${JSON.stringify(name)}` : ''}`;
}

export async function simulate(
  options: SimulateOptions,
  fn: (cluster: SimCluster) => Promise<void> | void,
): Promise<SimulateResult> {
  const seed = chooseSeed(options.seed);
  // Loaded before simulated time starts, so a document's first use reads no module mid-run.
  await loadDocumentEngines();
  const sim = new Simulation({ seed });
  let cluster: SimCluster | undefined;
  const timers = SimulatedTimers.install(sim);
  try {
    const c = new SimCluster(sim, options);
    cluster = c;
    const booted = await sim.runUntil(() => c.ids.every((id) => sim.host(id).app !== undefined), BOOT_BOUND_MS);
    if (sim.failure) throw sim.failure;
    if (!booted) throw new Error(`the nodes did not boot within ${BOOT_BOUND_MS} simulated ms`);
    await driveWhileAwaiting(sim, c, fn, toMs(options.awaitLimit ?? '10m'));
    if (sim.failure) throw sim.failure;
    return {
      seed,
      simulatedMs: sim.nowMs(),
      steps: sim.steps,
      fingerprint: sim.fingerprint(),
      history: c.historyText(),
    };
  } catch (err) {
    throw explain(err, seed, sim, cluster, options.replayEnv ?? []);
  } finally {
    timers.uninstall();
  }
}

function explain(
  err: unknown,
  seed: number,
  sim: Simulation,
  cluster: SimCluster | undefined,
  replayEnv: readonly string[],
): unknown {
  const lines = [`PARLEY_SEED=${seed}`, `replay: ${replayCommand(seed, replayEnv)}`];
  if (err instanceof SimulationExpectationError && cluster) {
    try {
      const svg = timelineSvg(cluster.recorder.calls, err.calls, sim.nowMs(), `${err.check} failed, seed ${seed}`);
      err.timeline = writeTimeline(svg, seed);
      lines.push(`timeline: ${err.timeline}`);
    } catch (e) {
      lines.push(`(timeline not written: ${String(e)})`);
    }
  }
  const tail = lines.join('\n');
  if (err instanceof Error) {
    if (!err.message.includes(`PARLEY_SEED=${seed}`)) err.message = `${err.message}\n${tail}`;
  } else {
    console.error(tail);
  }
  return err;
}

/**
 * Runs `fn`. While it awaits anything but `cluster.run`/`runUntil` (a node
 * call, a promise of its own), the simulation keeps stepping, so
 * `await node.strong('jobs').get('a')` completes in simulated time. Stepping
 * stops while a `run` is in progress (it steps itself) and once `fn` settles.
 */
async function driveWhileAwaiting(
  sim: Simulation,
  cluster: SimCluster,
  fn: (cluster: SimCluster) => Promise<void> | void,
  limitMs: number,
): Promise<void> {
  let settled = false;
  let failed: { err: unknown } | undefined;
  let wake: (() => void) | undefined;
  const done = (async () => fn(cluster))().then(
    () => {
      settled = true;
      wake?.();
    },
    (err: unknown) => {
      settled = true;
      failed = { err };
      wake?.();
    },
  );
  let advanced = 0;
  await macrotask(); // fn's own continuations first: it may have settled or called run
  while (!settled && !sim.failure) {
    if (cluster.isDriving) {
      await Promise.race([cluster.idle(), new Promise<void>((r) => (wake = r))]);
      await macrotask();
      continue;
    }
    const before = sim.nowMs();
    const step = sim.step();
    cluster.stepping = step;
    const progressed = await step;
    advanced += sim.nowMs() - before;
    if (!progressed && !settled && !cluster.isDriving) {
      throw new Error('the test awaits something no simulated event will settle (nothing is scheduled)');
    }
    if (advanced > limitMs && !settled) {
      throw new Error(
        `the test awaited for ${limitMs} simulated ms outside cluster.run() and it has not settled (raise awaitLimit, or check what it awaits)`,
      );
    }
  }
  if (!settled && sim.failure) throw sim.failure; // what fn awaits may never settle now
  await done;
  if (failed) throw failed.err;
}

/** Lets every queued microtask run (as the simulator does between events; not a timer, reads no clock). */
function macrotask(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
