/**
 * The run's record: every operation a client invoked, with the real times of
 * its call and its reply (the harness's monotonic clock, milliseconds since the
 * run began, and the wall clock), the node it went through and its outcome —
 * `ok`, `fail` (certainly did nothing) or `info` (unknown: a timeout, a lost
 * reply, a 5xx) — plus the faults, on the same timeline. Histories are written
 * as JSON (everything) and as EDN for `parley-check` (one file per model).
 */
import type { HistoryEvent, HistoryValue } from '@parley/check';
import { toKnossosEdn } from '@parley/check';

export type Outcome = 'ok' | 'fail' | 'info';

export interface Op {
  readonly id: number;
  /** The workload (and so the model) this call belongs to. */
  readonly workload: string;
  readonly process: number;
  readonly f: string;
  readonly key: string;
  /** The argument, in the model's format (docs/checkers.md). */
  readonly value: HistoryValue;
  readonly node: string;
  readonly invokeMs: number;
  readonly invokeWall: number;
  type?: Outcome;
  /** The result, in the model's format. */
  result?: HistoryValue;
  error?: string;
  completeMs?: number;
  completeWall?: number;
  /** Facts the time checks read (created_at, expires_at, …). */
  extra?: Record<string, string | number | boolean | null>;
}

/** A fault on the timeline: when it began, when it was healed, what it hit. */
export interface FaultRecord {
  readonly id: number;
  readonly kind: string;
  readonly targets: readonly string[];
  readonly startMs: number;
  endMs?: number;
  readonly detail: string;
  /** What applying it did (a node that would not restart, bytes written to fill a disk, …). */
  notes: string[];
}

export class Recorder {
  readonly ops: Op[] = [];
  readonly faults: FaultRecord[] = [];
  /** Events in the order they happened: [op, 'invoke' | 'complete']. */
  private readonly order: Array<[Op, boolean]> = [];
  private readonly t0 = performance.now();
  private nextProcess = 0;
  readonly wallStart = Date.now();

  /** Milliseconds since the run began (monotonic: no nemesis moves the harness's clock). */
  now(): number {
    return performance.now() - this.t0;
  }

  /** A fresh client process id (a client whose call had an unknown outcome gets a new one). */
  newProcess(): number {
    return this.nextProcess++;
  }

  invoke(workload: string, process: number, f: string, key: string, value: HistoryValue, node: string): Op {
    const op: Op = {
      id: this.ops.length,
      workload,
      process,
      f,
      key,
      value,
      node,
      invokeMs: this.now(),
      invokeWall: Date.now(),
    };
    this.ops.push(op);
    this.order.push([op, true]);
    return op;
  }

  complete(op: Op, type: Outcome, result: HistoryValue, error?: string, extra?: Op['extra']): void {
    if (op.type !== undefined) throw new Error(`operation ${op.id} completed twice`);
    op.type = type;
    op.result = result;
    if (error !== undefined) op.error = error;
    if (extra !== undefined) op.extra = extra;
    op.completeMs = this.now();
    op.completeWall = Date.now();
    this.order.push([op, false]);
  }

  fault(kind: string, targets: readonly string[], detail: string): FaultRecord {
    const f: FaultRecord = { id: this.faults.length, kind, targets, startMs: this.now(), detail, notes: [] };
    this.faults.push(f);
    return f;
  }

  /** The events of one workload in real-time order, for parley-check (`strip` removes time-aware fields). */
  events(workload: string, strip?: (v: HistoryValue) => HistoryValue): HistoryEvent[] {
    const out: HistoryEvent[] = [];
    for (const [op, isInvoke] of this.order) {
      if (op.workload !== workload) continue;
      if (isInvoke) {
        out.push({
          type: 'invoke',
          process: op.process,
          timeMs: op.invokeMs,
          f: op.f,
          value: strip ? strip(op.value) : op.value,
          key: op.key,
        });
      } else {
        const e: HistoryEvent = {
          type: op.type as Outcome,
          process: op.process,
          timeMs: op.completeMs as number,
          f: op.f,
          value: op.result ?? null,
          key: op.key,
          ...(op.error === undefined ? {} : { error: op.error }),
        };
        out.push(e);
      }
    }
    return out;
  }

  /** The history of one workload as a Knossos EDN vector. */
  edn(workload: string, strip?: (v: HistoryValue) => HistoryValue): string {
    return toKnossosEdn(this.events(workload, strip));
  }

  /** Each operation's positions in the recording order: its call, its return (null while open). */
  positions(): Map<Op, [number, number | null]> {
    const out = new Map<Op, [number, number | null]>();
    this.order.forEach(([op, isInvoke], i) => {
      if (isInvoke) out.set(op, [i, null]);
      else (out.get(op) as [number, number | null])[1] = i;
    });
    return out;
  }

  /** The operations of one workload. */
  of(workload: string): Op[] {
    return this.ops.filter((o) => o.workload === workload);
  }
}
