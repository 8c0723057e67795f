/**
 * Availability per fault, from the history: the time from the fault's start
 * to the first successful strong call invoked after it, and from its heal to
 * the first one invoked after that; and, for calls sent through the processes
 * the fault hit while it lasted, how they ended and how long they took — the
 * fail-fast question: does a node that cannot reach a leader answer
 * `unavailable` quickly, or hold the call to its 10 s bound?
 */
import type { FaultRecord, Op } from '../history.js';

export const STRONG_WORKLOADS = ['register', 'lock', 'lease', 'claim', 'ttl'];

export interface Availability {
  readonly fault: FaultRecord;
  /** ms from the fault's start to the first success among calls invoked after it (null: none before the heal + 60 s). */
  readonly toFirstOk: number | null;
  /** ms from the heal to the first success among calls invoked after it and before the next fault (null: none). */
  readonly healToFirstOk: number | null;
  /** Calls through the faulted processes while the fault lasted. */
  readonly via: {
    calls: number;
    ok: number;
    unavailable: number;
    timedOut: number;
    /** Median ms to a 503 answer (a fail-fast refusal). */
    median503Ms: number | null;
    medianFailMs: number | null;
    maxFailMs: number | null;
  };
}

function firstOk(ops: readonly Op[], from: number, until: number): number | null {
  let best: number | null = null;
  for (const op of ops) {
    if (op.type !== 'ok' || op.invokeMs < from || op.invokeMs > until) continue;
    const done = op.completeMs as number;
    if (best === null || done < best) best = done;
  }
  return best === null ? null : best - from;
}

const median = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

export function availability(faults: readonly FaultRecord[], allOps: readonly Op[]): Availability[] {
  const ops = allOps.filter((o) => STRONG_WORKLOADS.includes(o.workload) && o.completeMs !== undefined);
  return faults.map((fault, i) => {
    const end = fault.endMs ?? fault.startMs;
    // After the heal, until the next fault (a success after that one says nothing of this one).
    const next = faults[i + 1]?.startMs ?? Number.POSITIVE_INFINITY;
    const during = ops.filter((o) => fault.targets.includes(o.node) && o.invokeMs >= fault.startMs && o.invokeMs < end);
    // Unknown outcomes (a 5xx answer or no answer) and 503 refusals (on the built-in backend a
    // strong `unavailable` is a definite failure); refused connections and 4xx answers are not waits.
    const refusal = (o: Op) => o.error === 'unavailable' || o.error === 'not_leader' || o.error === 'closed';
    const failed = during.filter((o) => o.type === 'info' || (o.type === 'fail' && refusal(o)));
    const lat = failed.map((o) => (o.completeMs as number) - o.invokeMs);
    const lat503 = during.filter(refusal).map((o) => (o.completeMs as number) - o.invokeMs);
    return {
      fault,
      toFirstOk: firstOk(ops, fault.startMs, end + 60_000),
      healToFirstOk: firstOk(ops, end, Math.min(next, end + 60_000)),
      via: {
        calls: during.length,
        ok: during.filter((o) => o.type === 'ok').length,
        unavailable: lat503.length,
        timedOut: during.filter((o) => o.error === 'timeout' || o.error === 'client-timeout').length,
        median503Ms: median(lat503),
        medianFailMs: median(lat),
        maxFailMs: lat.length === 0 ? null : Math.max(...lat),
      },
    };
  });
}
