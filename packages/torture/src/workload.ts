/**
 * What every workload shares: the run's context, client processes (one call
 * in flight each; a process whose call had an unknown outcome is replaced by a
 * new one, as Jepsen does, and the call is never retried blindly), and `perform`,
 * which records a call, makes it and classifies its outcome.
 */
import type { HistoryValue } from '@parley/check';
import { STRONG_WORKLOADS } from './check/availability.js';
import type { Cluster } from './cluster.js';
import type { Op, Outcome, Recorder } from './history.js';
import { type CallOptions, call, errorCode, type HttpOutcome, isDefiniteFailure, isOk } from './http.js';
import type { ParleyNode } from './parley-node.js';
import type { Random } from './random.js';

/** The node's own bound on a call is 10 s; the client waits a little longer before calling the outcome unknown. */
export const CALL_TIMEOUT_MS = 12_000;

export interface WorkloadOptions {
  /** Client processes per workload. */
  readonly concurrency: number;
  /** The clock bound ε the time checks allow (the spread of the nodes' clock offsets plus a margin). */
  readonly skewMs: number;
  /** Lock, lease and entry TTLs are drawn from this range (seconds). */
  readonly ttlSeconds: readonly [number, number];
  /** Pause between a process's calls is drawn from 0..thinkMs. */
  readonly thinkMs: number;
  /**
   * A strong call answered 503 `unavailable` did nothing (the built-in backend's fail-fast rule,
   * docs/guarantees.md): it is a `fail`, so the checkers hold the node to it. On etcd it is `info`.
   */
  readonly unavailableIsDefinite: boolean;
}

export interface Context {
  readonly cluster: Cluster;
  readonly rec: Recorder;
  readonly rnd: Random;
  readonly options: WorkloadOptions;
  /** Set when the run's fault phase ends: workloads stop invoking. */
  readonly stopping: { value: boolean };
}

export interface Workload {
  readonly name: string;
  /** Runs until `ctx.stopping` is set, then returns once its calls have completed. */
  run(ctx: Context): Promise<void>;
  /** After every fault is healed: final reads, convergence waits. */
  final?(ctx: Context): Promise<void>;
}

/** The mapping of one call's HTTP outcome to the model's outcome. */
export interface Interpretation {
  readonly type: Outcome;
  readonly result?: HistoryValue;
  readonly error?: string;
  readonly extra?: Op['extra'];
}

/** The real (wall-clock) times of a call, for replies judged against them. */
export interface CallTimes {
  readonly invokeWall: number;
  readonly replyWall: number;
}

export type Interpret = (o: HttpOutcome, times: CallTimes) => Interpretation | undefined;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A client: its current process id (replaced after an unknown outcome). */
export class Client {
  process: number;

  constructor(
    readonly ctx: Context,
    readonly workload: string,
    readonly rnd: Random,
  ) {
    this.process = ctx.rec.newProcess();
  }

  /** A node picked at random (clients know nothing of the faults). */
  node(): ParleyNode {
    return this.rnd.pick(this.ctx.cluster.gateways);
  }

  /** A strong call the node refused with 503 `unavailable`: never proposed, where the backend says so. */
  private refusedUnsent(o: HttpOutcome): boolean {
    if (!this.ctx.options.unavailableIsDefinite || !STRONG_WORKLOADS.includes(this.workload)) return false;
    return o.kind === 'reply' && o.status === 503 && errorCode(o) === 'unavailable';
  }

  think(): Promise<void> {
    return sleep(this.rnd.int(0, this.ctx.options.thinkMs));
  }

  /**
   * Records and makes one call. `interpret` maps a 2xx reply (and any
   * reply it knows) to the model; a 4xx it does not handle is a `fail` with
   * the error code, a refused connection a `fail`, anything else `info`.
   */
  async perform(
    f: string,
    key: string,
    value: HistoryValue,
    path: string,
    request: Omit<CallOptions, 'timeoutMs'> & { timeoutMs?: number },
    interpret: Interpret,
    node: ParleyNode = this.node(),
  ): Promise<{ op: Op; outcome: HttpOutcome }> {
    const op = this.ctx.rec.invoke(this.workload, this.process, f, key, value, node.name);
    const outcome = await call(node.url, path, { timeoutMs: CALL_TIMEOUT_MS, ...request });
    let r = interpret(outcome, { invokeWall: op.invokeWall, replyWall: Date.now() });
    if (r === undefined) {
      if (isOk(outcome)) throw new Error(`${this.workload} ${f}: a 2xx reply the workload does not interpret`);
      r =
        isDefiniteFailure(outcome) || this.refusedUnsent(outcome)
          ? { type: 'fail', error: errorCode(outcome) }
          : { type: 'info', error: errorCode(outcome) };
    }
    this.ctx.rec.complete(op, r.type, r.result ?? null, r.error, r.extra);
    if (r.type === 'info') this.process = this.ctx.rec.newProcess();
    // A refused connection (the node is down) is answered at once: back off a little.
    if (outcome.kind === 'refused') await sleep(this.rnd.int(100, 300));
    return { op, outcome };
  }
}

/** Runs `n` clients of a workload until the run stops. */
export async function runClients(
  ctx: Context,
  workload: string,
  n: number,
  body: (client: Client) => Promise<void>,
): Promise<void> {
  const clients = Array.from({ length: n }, (_, i) => new Client(ctx, workload, ctx.rnd.fork(`${workload}-${i}`)));
  await Promise.all(
    clients.map(async (c) => {
      while (!ctx.stopping.value) {
        await body(c);
        await c.think();
      }
    }),
  );
}

/** The `data` of a 2xx reply. */
export function dataOf(o: HttpOutcome): Record<string, unknown> {
  if (o.kind !== 'reply') return {};
  return (o.body.data ?? {}) as Record<string, unknown>;
}

/** A key that changes every `periodMs` of the run, `slots` of them at a time (bounds each key's history). */
export function rotatingKey(ctx: Context, rnd: Random, prefix: string, periodMs: number, slots: number): string {
  return `${prefix}${Math.floor(ctx.rec.now() / periodMs)}-${rnd.int(0, slots - 1)}`;
}
