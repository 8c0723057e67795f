/**
 * Bounded staleness over a session history with real times: a read promised
 * `maxStalenessMs` returns a state no older than that bound, so it may miss a
 * write only if the write was not yet acknowledged `maxStalenessMs` before the
 * read was called. The check is against acknowledgements, the one moment a
 * history proves a write committed: a read that returned a version beaten by a
 * write acknowledged before `invokeMs − maxStalenessMs` is a violation. (A
 * write can commit before its reply arrives, so a lag just past the bound can
 * go unseen; nothing reported is a false alarm.)
 *
 * All times come from the one clock of the recorder (the simulator's, or the
 * harness's monotonic clock), never from the replicas.
 */

import { type CompareVersions, indexWrites, type SessionOp } from './history.js';

export interface StalenessOptions<V> {
  /** The bound each read was promised (ms); reads without one are not checked. */
  readonly boundOf: (read: Extract<SessionOp<V>, { kind: 'read' }>) => number | undefined;
  readonly compare: CompareVersions<V>;
  readonly maxViolations?: number;
}

export interface StalenessViolation {
  /** Index of the read. */
  readonly op: number;
  readonly key: string;
  readonly saw: string | null;
  /** The write it missed, acknowledged this long before the read was called. */
  readonly missed: string;
  readonly staleByMs: number;
  readonly boundMs: number;
}

export interface StalenessResult {
  readonly ok: boolean;
  readonly violations: readonly StalenessViolation[];
  readonly truncated: boolean;
}

export function checkBoundedStaleness<V>(ops: readonly SessionOp<V>[], options: StalenessOptions<V>): StalenessResult {
  const { compare } = options;
  const max = options.maxViolations ?? 100;
  const table = indexWrites(ops);
  // Acknowledged writes per key, by acknowledgement time.
  const acked = new Map<string, { id: string; version: V; at: number }[]>();
  for (const [id, w] of table.byId) {
    if (w.op.outcome !== 'ok' || w.op.completeMs === undefined) continue;
    let list = acked.get(w.op.key);
    if (list === undefined) {
      list = [];
      acked.set(w.op.key, list);
    }
    list.push({ id, version: w.version, at: w.op.completeMs });
  }
  for (const list of acked.values()) list.sort((a, b) => a.at - b.at);

  const violations: StalenessViolation[] = [];
  let truncated = false;
  ops.forEach((op, index) => {
    if (op.kind !== 'read' || op.outcome !== 'ok' || op.invokeMs === undefined) return;
    const bound = options.boundOf(op);
    if (bound === undefined) return;
    const seen = op.saw === null ? undefined : table.byId.get(op.saw)?.version;
    const horizon = op.invokeMs - bound;
    let worst: { id: string; at: number } | undefined;
    for (const w of acked.get(op.key) ?? []) {
      if (w.at >= horizon) break;
      if (seen === undefined || compare(w.version, seen) > 0) worst = worst ?? w;
    }
    if (worst === undefined) return;
    if (violations.length >= max) {
      truncated = true;
      return;
    }
    violations.push({
      op: index,
      key: op.key,
      saw: op.saw,
      missed: worst.id,
      staleByMs: op.invokeMs - worst.at,
      boundMs: bound,
    });
  });
  return { ok: violations.length === 0, violations, truncated };
}
