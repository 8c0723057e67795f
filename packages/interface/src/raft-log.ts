import type { PeerId } from './transport.js';

/**
 * The Raft log storage contract, in etcd-raft's shape: reads are synchronous
 * and served from memory (an implementation loads its log on open), writes are
 * durable before their promise resolves.
 */

export type EntryType = 'normal' | 'conf';

export interface RaftEntry {
  term: number;
  index: number;
  type: EntryType;
  data: Uint8Array;
}

/** Persistent Raft state. `vote` is '' when this node has not voted in `term`. */
export interface HardState {
  term: number;
  vote: PeerId;
  commit: number;
}

export interface ConfState {
  voters: PeerId[];
  learners: PeerId[];
}

export interface SnapshotMeta {
  index: number;
  term: number;
  confState: ConfState;
}

export interface RaftSnapshot {
  meta: SnapshotMeta;
  data: Uint8Array;
}

export const EMPTY_HARD_STATE: HardState = Object.freeze({ term: 0, vote: '', commit: 0 });

export const EMPTY_SNAPSHOT: RaftSnapshot = Object.freeze({
  meta: Object.freeze({ index: 0, term: 0, confState: Object.freeze({ voters: [], learners: [] }) }),
  data: new Uint8Array(0),
}) as RaftSnapshot;

/** What the Raft core reads. Errors: CompactedError, LogUnavailableError. */
export interface RaftLogReader {
  initialState(): { hardState: HardState; confState: ConfState };
  /**
   * Entries in [lo, hi). Stops before the total encoded size exceeds `maxBytes`
   * but always returns at least one entry when lo < hi.
   */
  entries(lo: number, hi: number, maxBytes?: number): RaftEntry[];
  /** Term of the entry at `index`; valid for firstIndex()-1 ..= lastIndex(). */
  term(index: number): number;
  /** Index of the first entry still in the log (snapshot index + 1). */
  firstIndex(): number;
  lastIndex(): number;
  snapshot(): RaftSnapshot;
}

export interface RaftLogUpdate {
  hardState?: HardState;
  /**
   * Appended after truncating any existing suffix from `entries[0].index` on.
   * Consecutive indexes; no gap after the last index (else InvalidArgumentError).
   */
  entries?: readonly RaftEntry[];
  /**
   * Replaces the log up to and including `snapshot.meta.index`; entries after
   * it are kept only when the log has the snapshot's last entry (same term).
   * A snapshot older than the stored one is InvalidArgumentError.
   */
  snapshot?: RaftSnapshot;
  /**
   * Default true: the save is durable (fsynced) before its promise resolves.
   * False: it may resolve before it is synced, and a crash may lose it (whole,
   * never torn); a later synced write makes it durable too (writes reach the
   * disk in issue order). Raft asks for it only when the update is a hard
   * state whose commit index alone moved (etcd's `MustSync`): the commit index
   * is recoverable from the quorum, so losing it loses nothing.
   */
  sync?: boolean;
}

/**
 * Every store behaves the same at the edges (the compliance suite of
 * @parley/storage checks them): they share the memory implementation's log
 * state, `MemoryRaftLogStorage` / `RaftLogState` in this package. A refused
 * write changes nothing.
 */
export interface RaftLogStorage extends RaftLogReader {
  /** Applies snapshot, then entries, then hard state, as one atomic, durable batch. */
  save(update: RaftLogUpdate): Promise<void>;
  /**
   * Records an application snapshot at `index`; does not compact. At the stored
   * snapshot's index it replaces that snapshot; below it is CompactedError;
   * past the last index LogUnavailableError.
   */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<RaftSnapshot>;
  /**
   * Discards entries up to and including `index`: past the snapshot index is
   * InvalidArgumentError, below the compaction point CompactedError, at it a no-op.
   */
  compact(index: number): Promise<void>;
  close(): Promise<void>;
}
