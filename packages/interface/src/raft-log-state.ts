/**
 * The in-memory Raft log that every Raft log store serves reads from (the
 * memory store, the level store of @parley/storage, the simulator's disk), and
 * the planning of each write: a store validates and plans an update here, makes
 * it durable its own way, then applies the plan. One implementation, so the
 * stores agree at every edge.
 *
 * The log is `entries`, preceded by a compaction point (`offsetIndex`,
 * `offsetTerm`): the last discarded entry, whose term stays known so that
 * `term(firstIndex() - 1)` answers. The snapshot is at or after that point.
 */
import { EntryColumns } from './arena.js';
import { CompactedError, InvalidArgumentError, LogUnavailableError } from './errors.js';
import {
  type ConfState,
  EMPTY_HARD_STATE,
  EMPTY_SNAPSHOT,
  type HardState,
  type RaftEntry,
  type RaftLogReader,
  type RaftLogUpdate,
  type RaftSnapshot,
} from './raft-log.js';

/** Bytes counted per entry on top of its data when applying `maxBytes`. */
export const ENTRY_OVERHEAD_BYTES = 24;

export function entrySizeBytes(e: RaftEntry): number {
  return e.data.length + ENTRY_OVERHEAD_BYTES;
}

/** What one `save` changes, computed before anything is written. */
export interface SavePlan {
  /** New compaction point, when it moves. */
  offset?: { index: number; term: number };
  snapshot?: RaftSnapshot;
  /** Stored entries with an index ≥ this are removed (before `append`), or undefined. */
  truncateFrom?: number;
  /** Entries to append (the caller's objects: a store copies their bytes when it applies the plan). */
  append: readonly RaftEntry[];
  hardState?: HardState;
}

function copyConf(c: ConfState): ConfState {
  return { voters: [...c.voters], learners: [...c.learners] };
}

function assertIndex(name: string, n: unknown): asserts n is number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new InvalidArgumentError(`${name} must be a non-negative safe integer`, { [name]: n });
  }
}

function checkHardState(hs: HardState): HardState {
  assertIndex('hardState.term', hs.term);
  assertIndex('hardState.commit', hs.commit);
  if (typeof hs.vote !== 'string') throw new InvalidArgumentError('hardState.vote must be a string');
  return { term: hs.term, vote: hs.vote, commit: hs.commit };
}

function checkEntry(e: RaftEntry): void {
  assertIndex('entry.index', e.index);
  assertIndex('entry.term', e.term);
  if (e.type !== 'normal' && e.type !== 'conf') throw new InvalidArgumentError(`unknown entry type '${e.type}'`);
  if (!(e.data instanceof Uint8Array)) throw new InvalidArgumentError('entry.data must be a Uint8Array');
}

export class RaftLogState implements RaftLogReader {
  hardState: HardState = EMPTY_HARD_STATE;
  snapshotValue: RaftSnapshot = EMPTY_SNAPSHOT;
  offsetIndex = 0;
  offsetTerm = 0;
  /** The entries after the compaction point: the k-th (0-based) has index offsetIndex + 1 + k. */
  readonly columns = new EntryColumns();

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: { ...this.hardState }, confState: copyConf(this.snapshotValue.meta.confState) };
  }

  firstIndex(): number {
    return this.offsetIndex + 1;
  }

  lastIndex(): number {
    return this.offsetIndex + this.columns.length;
  }

  term(index: number): number {
    if (index < this.offsetIndex) throw new CompactedError(index, this.firstIndex());
    if (index > this.lastIndex()) throw new LogUnavailableError(index, this.lastIndex());
    if (index === this.offsetIndex) return this.offsetTerm;
    return this.columns.term(index - this.offsetIndex - 1);
  }

  entries(lo: number, hi: number, maxBytes = Number.POSITIVE_INFINITY): RaftEntry[] {
    if (lo < this.firstIndex()) throw new CompactedError(lo, this.firstIndex());
    if (hi > this.lastIndex() + 1) throw new LogUnavailableError(hi - 1, this.lastIndex());
    if (lo > hi) throw new InvalidArgumentError(`entries(${lo}, ${hi}): lo is past hi`);
    const from = lo - this.offsetIndex - 1;
    const to = hi - this.offsetIndex - 1;
    const out: RaftEntry[] = [];
    let size = 0;
    for (let k = from; k < to; k++) {
      size += this.columns.dataBytes(k) + ENTRY_OVERHEAD_BYTES;
      if (out.length > 0 && size > maxBytes) break;
      out.push(this.columns.entry(k, this.offsetIndex + 1 + k));
    }
    return out;
  }

  snapshot(): RaftSnapshot {
    return this.snapshotValue;
  }

  /** Validates `update` against the current log and returns what it changes. Throws before any write. */
  planSave(update: RaftLogUpdate): SavePlan {
    const plan: SavePlan = { append: [] };
    let offsetIndex = this.offsetIndex;
    let lastIndex = this.lastIndex();
    const snap = update.snapshot;
    if (snap) {
      assertIndex('snapshot.meta.index', snap.meta.index);
      assertIndex('snapshot.meta.term', snap.meta.term);
      if (!(snap.data instanceof Uint8Array)) throw new InvalidArgumentError('snapshot.data must be a Uint8Array');
      if (snap.meta.index < this.snapshotValue.meta.index) {
        throw new InvalidArgumentError(
          `snapshot at ${snap.meta.index} is older than the stored snapshot at ${this.snapshotValue.meta.index}`,
        );
      }
      plan.snapshot = {
        meta: { index: snap.meta.index, term: snap.meta.term, confState: copyConf(snap.meta.confState) },
        data: snap.data,
      };
      // Keep the entries after the snapshot only when the log agrees with it at its index.
      const agrees =
        snap.meta.index >= this.offsetIndex &&
        snap.meta.index <= lastIndex &&
        this.term(snap.meta.index) === snap.meta.term;
      plan.offset = { index: snap.meta.index, term: snap.meta.term };
      if (!agrees) {
        plan.truncateFrom = offsetIndex + 1;
        lastIndex = snap.meta.index;
      }
      offsetIndex = snap.meta.index;
    }
    const entries = update.entries ?? [];
    if (entries.length > 0) {
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i]!;
        checkEntry(e);
        if (e.index !== entries[0]!.index + i) {
          throw new InvalidArgumentError('entries must have consecutive indexes', { at: i, index: e.index });
        }
        if (i > 0 && e.term < entries[i - 1]!.term) {
          throw new InvalidArgumentError('entry terms must not decrease', { index: e.index });
        }
      }
      // Entries at or below the compaction point are committed and already folded into the snapshot.
      const keep = entries[0]!.index > offsetIndex ? entries : entries.filter((e) => e.index > offsetIndex);
      if (keep.length > 0) {
        const first = keep[0]!.index;
        if (first > lastIndex + 1) {
          throw new InvalidArgumentError(`entry ${first} would leave a gap after last index ${lastIndex}`);
        }
        const prevTerm = first - 1 === offsetIndex ? (plan.offset?.term ?? this.offsetTerm) : this.term(first - 1);
        if (keep[0]!.term < prevTerm) {
          throw new InvalidArgumentError(
            `entry ${first} has term ${keep[0]!.term} below its predecessor's ${prevTerm}`,
          );
        }
        if (first <= lastIndex) {
          // Rewriting the log is allowed only past the commit index: a committed entry never changes.
          const commit = this.hardState.commit;
          for (let i = first; i <= Math.min(commit, lastIndex, keep[keep.length - 1]!.index); i++) {
            if (i > offsetIndex && keep[i - first]!.term !== this.term(i)) {
              throw new InvalidArgumentError(`entry ${i} is committed and cannot be replaced by a different term`);
            }
          }
          plan.truncateFrom = Math.min(plan.truncateFrom ?? first, first);
        }
        plan.append = keep;
        lastIndex = keep[keep.length - 1]!.index;
      }
    }
    if (update.hardState) plan.hardState = checkHardState(update.hardState);
    const commit = (plan.hardState ?? this.hardState).commit;
    if (commit > lastIndex) {
      throw new InvalidArgumentError(`commit index ${commit} would be past the last index ${lastIndex}`);
    }
    return plan;
  }

  /** Applies a plan made by `planSave` (after the store made it durable). */
  applySave(plan: SavePlan): void {
    if (plan.snapshot) this.snapshotValue = plan.snapshot;
    if (plan.truncateFrom !== undefined) this.columns.truncate(plan.truncateFrom - this.offsetIndex - 1);
    if (plan.offset) {
      const drop = plan.offset.index - this.offsetIndex;
      if (drop >= this.columns.length) this.columns.clear();
      else this.columns.dropFront(drop);
      this.offsetIndex = plan.offset.index;
      this.offsetTerm = plan.offset.term;
    }
    for (const e of plan.append) this.columns.push(e.term, e.type, e.data);
    if (plan.hardState) this.hardState = plan.hardState;
  }

  /** Validates a createSnapshot call and returns the snapshot it records. */
  planCreateSnapshot(index: number, confState: ConfState, data: Uint8Array): RaftSnapshot {
    assertIndex('index', index);
    if (!(data instanceof Uint8Array)) throw new InvalidArgumentError('snapshot data must be a Uint8Array');
    // Older than the stored snapshot: that part of the log is, as far as Raft is concerned, compacted.
    if (index < this.snapshotValue.meta.index) throw new CompactedError(index, this.snapshotValue.meta.index + 1);
    const term = this.term(index);
    return { meta: { index, term, confState: copyConf(confState) }, data };
  }

  /** Validates a compact call; returns the new compaction point, or undefined when nothing changes. */
  planCompact(index: number): { index: number; term: number } | undefined {
    assertIndex('index', index);
    if (index < this.offsetIndex) throw new CompactedError(index, this.firstIndex());
    if (index > this.snapshotValue.meta.index) {
      throw new InvalidArgumentError(
        `cannot compact through ${index}: past the snapshot at ${this.snapshotValue.meta.index}`,
      );
    }
    if (index === this.offsetIndex) return undefined;
    return { index, term: this.term(index) };
  }

  applyCompact(point: { index: number; term: number }): void {
    this.columns.dropFront(point.index - this.offsetIndex);
    this.offsetIndex = point.index;
    this.offsetTerm = point.term;
  }

  /** An independent copy (entry bytes copied): what a store reopened on this state starts from. */
  clone(): RaftLogState {
    const c = new RaftLogState();
    c.hardState = { ...this.hardState };
    c.snapshotValue = this.snapshotValue;
    c.offsetIndex = this.offsetIndex;
    c.offsetTerm = this.offsetTerm;
    for (let k = 0; k < this.columns.length; k++) {
      const e = this.columns.entry(k, this.offsetIndex + 1 + k);
      c.columns.push(e.term, e.type, e.data);
    }
    return c;
  }
}
