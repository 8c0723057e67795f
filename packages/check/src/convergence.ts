/**
 * Convergence of eventual (CRDT) replicas, checked after the liveness phase:
 *
 * 1. every replica holds an equal state, and
 * 2. no acknowledged write vanished: for each acknowledged write, the final
 *    state under its key is that write or one that beats it in the LWW order
 *    (a delete that beats it may have left no trace once its tombstone was
 *    collected; it must then be among the known writes).
 *
 * The checker does not know the CRDT: state equality, where a key's winning
 * stamp lives and the LWW order are injected.
 */

/** A write an eventual replica acknowledged. */
export interface EventualWrite<T> {
  readonly key: string;
  /** Its LWW stamp (for Parley: the HLC timestamp with the node id tie-break). */
  readonly stamp: T;
  /** True for a delete (a tombstone). */
  readonly delete?: boolean;
  /** Replica that acknowledged it, for reports. */
  readonly replica?: string;
}

export interface ConvergenceSpec<S, T> {
  /** Are two replica states equal? */
  equal(a: S, b: S): boolean;
  /** The stamp of what `state` holds under `key` (a live value or a tombstone), or undefined if nothing. */
  stampOf(state: S, key: string): T | undefined;
  /** The LWW order: < 0 when `a` loses to `b`, 0 for the same write, > 0 when `a` wins. */
  compare(a: T, b: T): number;
  /** Keeps reports bounded. Default 100. */
  readonly maxViolations?: number;
}

export type ConvergenceViolation<T> =
  | { readonly type: 'diverged'; readonly replicas: readonly [string, string] }
  | {
      readonly type: 'lost-write';
      readonly replica: string;
      readonly key: string;
      readonly write: EventualWrite<T>;
      /** What the replica holds instead (undefined: nothing). */
      readonly found: T | undefined;
    };

export interface ConvergenceResult<T> {
  readonly ok: boolean;
  readonly violations: readonly ConvergenceViolation<T>[];
  /** True when more violations existed than were kept. */
  readonly truncated: boolean;
}

/**
 * @example
 * ```ts
 * const r = checkConvergence(new Map([['a', mapA], ['b', mapB]]), acked, {
 *   equal: (x, y) => x.digest() === y.digest(),
 *   stampOf: (s, key) => s.stampOf(key),
 *   compare: compareHlc,
 * });
 * ```
 */
export function checkConvergence<S, T>(
  replicas: ReadonlyMap<string, S>,
  acknowledged: readonly EventualWrite<T>[],
  spec: ConvergenceSpec<S, T>,
): ConvergenceResult<T> {
  const max = spec.maxViolations ?? 100;
  const violations: ConvergenceViolation<T>[] = [];
  let truncated = false;
  const add = (v: ConvergenceViolation<T>) => {
    if (violations.length < max) violations.push(v);
    else truncated = true;
  };

  const ids = [...replicas.keys()].sort();
  if (ids.length > 0) {
    const firstId = ids[0]!;
    const first = replicas.get(firstId)!;
    for (const id of ids.slice(1)) {
      if (!spec.equal(first, replicas.get(id)!)) add({ type: 'diverged', replicas: [firstId, id] });
    }
  }

  // Deletes per key, to excuse a write whose winning tombstone was collected.
  const deletes = new Map<string, T[]>();
  for (const w of acknowledged) {
    if (!w.delete) continue;
    let list = deletes.get(w.key);
    if (list === undefined) deletes.set(w.key, (list = []));
    list.push(w.stamp);
  }

  for (const id of ids) {
    const state = replicas.get(id)!;
    for (const w of acknowledged) {
      const found = spec.stampOf(state, w.key);
      if (found !== undefined) {
        if (spec.compare(found, w.stamp) < 0) add({ type: 'lost-write', replica: id, key: w.key, write: w, found });
        continue;
      }
      const collected = deletes.get(w.key)?.some((d) => spec.compare(d, w.stamp) >= 0) ?? false;
      if (!collected) add({ type: 'lost-write', replica: id, key: w.key, write: w, found: undefined });
    }
  }
  return { ok: violations.length === 0 && !truncated, violations, truncated };
}
