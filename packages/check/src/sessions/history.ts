/**
 * Session histories: reads and writes of single keys, each in its session's order,
 * with the identity of the write each read returned. The session checkers
 * (`guarantees.ts`, `staleness.ts`) and their brute-force reference
 * (`reference.ts`) all read this shape.
 *
 * Writes are unique (the workload makes each written value unique, so a read
 * names the write it saw), and each write that took effect has a version in the
 * store's arbitration order (an LWW stamp, a strong revision): the order in
 * which a replica lets one write of a key win over another. The order is
 * injected, as the convergence checker's is.
 */

import { InvalidArgumentError } from '@parley/interface';

/** What a call came to: acknowledged, certainly not applied, or ambiguous (a lost reply, a timeout). */
export type SessionOutcome = 'ok' | 'fail' | 'unknown';

export interface SessionWrite<V> {
  readonly kind: 'write';
  readonly session: string;
  readonly key: string;
  /** The write's identity (its unique value); a delete is a write too. */
  readonly id: string;
  readonly outcome: SessionOutcome;
  /** Its version, when its reply carried one (an ambiguous write's comes from a read of it). */
  readonly version?: V;
  /** Real time of the call and of its reply (ms), for the staleness checker. */
  readonly invokeMs?: number;
  readonly completeMs?: number;
}

export interface SessionRead<V> {
  readonly kind: 'read';
  readonly session: string;
  readonly key: string;
  /** The id of the write the read returned; null when it found no write at all (the key never written). */
  readonly saw: string | null;
  /** The version it returned, which names an ambiguous write's version. */
  readonly version?: V;
  readonly outcome: SessionOutcome;
  readonly invokeMs?: number;
  readonly completeMs?: number;
}

export type SessionOp<V> = SessionWrite<V> | SessionRead<V>;

/** The arbitration order: < 0 when `a` loses to `b`, 0 for the same version, > 0 when `a` wins. */
export type CompareVersions<V> = (a: V, b: V) => number;

/** The writes that took effect (acknowledged, or seen by a read), by id, with their versions. */
export interface WriteTable<V> {
  readonly byId: ReadonlyMap<string, { readonly index: number; readonly op: SessionWrite<V>; readonly version: V }>;
}

/**
 * Indexes the history's writes (throws `InvalidArgumentError` for a history
 * the checkers cannot read: a duplicate write id, a write without a version). A write counts as taken effect when it was
 * acknowledged or when an acknowledged read returned it; an ambiguous write no
 * read saw is left out (whether it happened or not, it constrains nothing
 * anyone observed, so leaving it out can hide no violation that involves it and
 * can invent none).
 */
export function indexWrites<V>(ops: readonly SessionOp<V>[]): WriteTable<V> {
  const seen = new Map<string, V | undefined>();
  for (const op of ops) {
    if (op.kind === 'read' && op.outcome === 'ok' && op.saw !== null && seen.get(op.saw) === undefined) {
      seen.set(op.saw, op.version);
    }
  }
  const byId = new Map<string, { index: number; op: SessionWrite<V>; version: V }>();
  const ids = new Set<string>();
  ops.forEach((op, index) => {
    if (op.kind !== 'write') return;
    if (ids.has(op.id))
      throw new InvalidArgumentError(`write id ${op.id} appears twice: writes must be unique`, { id: op.id });
    ids.add(op.id);
    if (op.outcome === 'fail') return;
    if (op.outcome === 'unknown' && !seen.has(op.id)) return;
    const version = op.version ?? seen.get(op.id);
    if (version === undefined)
      throw new InvalidArgumentError(`write ${op.id} took effect but no reply or read gives its version`, {
        id: op.id,
      });
    byId.set(op.id, { index, op, version });
  });
  return { byId };
}
