/**
 * Durability of acknowledged strong writes across crashes and restarts.
 *
 * A strong write is acknowledged once committed at a Raft log index. After any
 * crash/restart sequence, what a replica recovers (its snapshot plus the log
 * entries after it) must still hold every acknowledged write:
 *
 * - at an index after the snapshot: the same write (key and version) at that index;
 * - at an index the snapshot covers: the snapshot holds that write under its key,
 *   or a write to that key from a later index (it was overwritten, not lost).
 */

/** An acknowledged strong write: its identity and the log index it committed at. */
export interface AckedWrite {
  readonly key: string;
  readonly version: string;
  readonly index: number;
}

/** What a replica recovered after restarting. */
export interface RecoveredState {
  /** The last index the snapshot covers (0: no snapshot). */
  readonly snapshotIndex: number;
  /** The snapshot's content: per key, the write it holds and the index of that write (a delete: version `null`). */
  readonly snapshot?: ReadonlyMap<string, { readonly version: string | null; readonly index: number }>;
  /** Log entries after the snapshot that carry writes: index → write. */
  readonly entries: ReadonlyMap<number, { readonly key: string; readonly version: string }>;
}

export type DurabilityViolation =
  | { readonly type: 'missing'; readonly write: AckedWrite }
  | {
      readonly type: 'replaced';
      readonly write: AckedWrite;
      readonly found: { readonly key: string; readonly version: string | null; readonly index: number };
    };

export interface DurabilityResult {
  readonly ok: boolean;
  readonly violations: readonly DurabilityViolation[];
  readonly truncated: boolean;
}

/**
 * @example
 * ```ts
 * const r = checkDurability(acked, { snapshotIndex: 0, entries: new Map([[1, { key: 'a', version: 'v1' }]]) });
 * ```
 */
export function checkDurability(
  acknowledged: readonly AckedWrite[],
  recovered: RecoveredState,
  options: { maxViolations?: number } = {},
): DurabilityResult {
  const max = options.maxViolations ?? 100;
  const violations: DurabilityViolation[] = [];
  let truncated = false;
  const add = (v: DurabilityViolation) => {
    if (violations.length < max) violations.push(v);
    else truncated = true;
  };
  for (const w of acknowledged) {
    if (w.index > recovered.snapshotIndex) {
      const e = recovered.entries.get(w.index);
      if (e === undefined) add({ type: 'missing', write: w });
      else if (e.key !== w.key || e.version !== w.version) {
        add({ type: 'replaced', write: w, found: { key: e.key, version: e.version, index: w.index } });
      }
      continue;
    }
    const s = recovered.snapshot?.get(w.key);
    if (s === undefined) {
      add({ type: 'missing', write: w });
    } else if (s.index < w.index || (s.index === w.index && s.version !== w.version)) {
      add({ type: 'replaced', write: w, found: { key: w.key, version: s.version, index: s.index } });
    }
  }
  return { ok: violations.length === 0 && !truncated, violations, truncated };
}
