import {
  CompactedError,
  LogUnavailableError,
  type RaftEntry,
  type RaftLogReader,
  type RaftSnapshot,
} from '@parley/interface';

/** Fixed per-entry overhead counted by size limits (term, index, type, length). */
export const ENTRY_OVERHEAD_BYTES = 24;

/** The size an entry counts for in every `maxBytes` limit of the Raft core and memory storage. */
export function entryBytes(e: RaftEntry): number {
  return e.data.byteLength + ENTRY_OVERHEAD_BYTES;
}

/**
 * Takes a prefix of `ents` whose total size stays within `maxBytes`, always
 * keeping at least one entry.
 */
export function limitBytes(ents: RaftEntry[], maxBytes: number | undefined): RaftEntry[] {
  if (maxBytes === undefined || ents.length <= 1) return ents;
  let size = entryBytes(ents[0] as RaftEntry);
  let n = 1;
  for (; n < ents.length; n++) {
    size += entryBytes(ents[n] as RaftEntry);
    if (size > maxBytes) break;
  }
  return n === ents.length ? ents : ents.slice(0, n);
}

/**
 * The Raft log as the core sees it: durable entries read from storage, then
 * entries not yet persisted (`unstable`), plus an unpersisted snapshot.
 */
export class RaftLog {
  unstableSnapshot: RaftSnapshot | undefined;
  unstable: RaftEntry[] = [];
  /** Index of `unstable[0]`. */
  unstableOffset: number;
  committed: number;
  applied: number;

  constructor(
    readonly storage: RaftLogReader,
    applied = 0,
  ) {
    const first = storage.firstIndex();
    this.unstableOffset = storage.lastIndex() + 1;
    this.committed = first - 1;
    this.applied = first - 1;
    const hs = storage.initialState().hardState;
    if (hs.commit > this.committed) this.committed = Math.min(hs.commit, storage.lastIndex());
    if (applied > this.applied) this.applied = Math.min(applied, this.committed);
  }

  firstIndex(): number {
    if (this.unstableSnapshot) return this.unstableSnapshot.meta.index + 1;
    return this.storage.firstIndex();
  }

  lastIndex(): number {
    if (this.unstable.length > 0) return this.unstableOffset + this.unstable.length - 1;
    if (this.unstableSnapshot) return this.unstableSnapshot.meta.index;
    return this.storage.lastIndex();
  }

  /** The last index already handed to storage as stable. */
  stableIndex(): number {
    return this.unstableOffset - 1;
  }

  /** Term of `i`; throws CompactedError / LogUnavailableError outside firstIndex()-1 ..= lastIndex(). */
  term(i: number): number {
    const last = this.lastIndex();
    if (i > last) throw new LogUnavailableError(i, last);
    if (i >= this.unstableOffset) return (this.unstable[i - this.unstableOffset] as RaftEntry).term;
    const snap = this.unstableSnapshot;
    if (snap) {
      if (i === snap.meta.index) return snap.meta.term;
      throw new CompactedError(i, snap.meta.index + 1);
    }
    return this.storage.term(i);
  }

  /** Term of `i`, or undefined when it is compacted or missing (never throws). */
  maybeTerm(i: number): number | undefined {
    if (i < 0 || i > this.lastIndex()) return undefined;
    if (i >= this.unstableOffset) return (this.unstable[i - this.unstableOffset] as RaftEntry).term;
    const snap = this.unstableSnapshot;
    if (snap) return i === snap.meta.index ? snap.meta.term : undefined;
    if (i < this.storage.firstIndex() - 1) return undefined;
    try {
      return this.storage.term(i);
    } catch {
      return undefined;
    }
  }

  lastTerm(): number {
    return this.term(this.lastIndex());
  }

  matchTerm(i: number, t: number): boolean {
    return this.maybeTerm(i) === t;
  }

  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /** Appends after truncating any conflicting suffix; returns the new last index. */
  append(ents: readonly RaftEntry[]): number {
    if (ents.length === 0) return this.lastIndex();
    const after = (ents[0] as RaftEntry).index;
    if (after - 1 < this.committed) {
      throw new Error(`raft: append at ${after} would overwrite committed index ${this.committed}`);
    }
    const end = this.unstableOffset + this.unstable.length;
    if (after === end) {
      for (const e of ents) this.unstable.push(e);
    } else if (after <= this.unstableOffset) {
      // Replaces the whole unstable tail (and shadows stable entries from `after` on).
      this.unstableOffset = after;
      this.unstable = ents.slice();
    } else {
      this.unstable = this.unstable.slice(0, after - this.unstableOffset);
      for (const e of ents) this.unstable.push(e);
    }
    return this.lastIndex();
  }

  /**
   * Follower append: when (index, logTerm) matches, appends the non-duplicate
   * part of `ents` and advances commit; returns the new last matching index,
   * or undefined on mismatch.
   */
  maybeAppend(index: number, logTerm: number, committed: number, ents: readonly RaftEntry[]): number | undefined {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNew = index + ents.length;
    const conflict = this.findConflict(ents);
    if (conflict !== 0) {
      if (conflict <= this.committed) {
        throw new Error(`raft: entry ${conflict} conflicts with committed entry (committed ${this.committed})`);
      }
      this.append(ents.slice(conflict - (index + 1)));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  /** First index in `ents` whose term differs from the log's (or that is new), or 0. */
  findConflict(ents: readonly RaftEntry[]): number {
    for (const e of ents) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The largest index ≤ `index` whose term is ≤ `term`, with that term
   * (the fast-backtracking hint). Stops at the first unknown term.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = index;
    for (;;) {
      const t = this.maybeTerm(i);
      if (t === undefined) return { index: i, term: 0 };
      if (t <= term) return { index: i, term: t };
      i--;
    }
  }

  commitTo(c: number): void {
    if (c <= this.committed) return;
    const last = this.lastIndex();
    if (c > last) throw new Error(`raft: commit ${c} is out of range [last ${last}]`);
    this.committed = c;
  }

  /** Leader commit rule (§5.4.2): only an entry of the current term commits by counting. */
  maybeCommit(maxIndex: number, term: number): boolean {
    if (maxIndex > this.committed && this.maybeTerm(maxIndex) === term) {
      this.commitTo(maxIndex);
      return true;
    }
    return false;
  }

  appliedTo(i: number): void {
    if (i === 0) return;
    if (i > this.committed || i < this.applied) {
      throw new Error(`raft: applied ${i} out of range [applied ${this.applied}, committed ${this.committed}]`);
    }
    this.applied = i;
  }

  /** Entries in [lo, hi) across storage and unstable, within `maxBytes` (at least one). */
  slice(lo: number, hi: number, maxBytes?: number): RaftEntry[] {
    if (lo >= hi) return [];
    const first = this.firstIndex();
    if (lo < first) throw new CompactedError(lo, first);
    const last = this.lastIndex();
    if (hi > last + 1) throw new LogUnavailableError(hi - 1, last);
    let out: RaftEntry[] = [];
    if (lo < this.unstableOffset) {
      out = this.storage.entries(lo, Math.min(hi, this.unstableOffset), maxBytes);
      if (out.length < Math.min(hi, this.unstableOffset) - lo) return out; // size-limited
    }
    if (hi > this.unstableOffset) {
      const from = Math.max(lo, this.unstableOffset) - this.unstableOffset;
      const tail = this.unstable.slice(from, hi - this.unstableOffset);
      out = out.length === 0 ? tail : out.concat(tail);
    }
    return limitBytes(out, maxBytes);
  }

  hasNextCommittedEntries(): boolean {
    return this.committed > this.applied && this.applied + 1 >= this.firstIndex();
  }

  nextCommittedEntries(maxBytes: number): RaftEntry[] {
    if (!this.hasNextCommittedEntries()) return [];
    return this.slice(this.applied + 1, this.committed + 1, maxBytes);
  }

  snapshot(): RaftSnapshot {
    return this.unstableSnapshot ?? this.storage.snapshot();
  }

  /** Entries handed to storage: drop them from `unstable` if still the same. */
  stableTo(index: number, term: number): void {
    if (index < this.unstableOffset) return;
    const e = this.unstable[index - this.unstableOffset];
    if (!e || e.term !== term) return;
    this.unstable = this.unstable.slice(index + 1 - this.unstableOffset);
    this.unstableOffset = index + 1;
  }

  stableSnapTo(index: number): void {
    if (this.unstableSnapshot && this.unstableSnapshot.meta.index === index) this.unstableSnapshot = undefined;
  }

  /** Replaces the log by a snapshot. */
  restore(snap: RaftSnapshot): void {
    this.committed = snap.meta.index;
    this.unstableSnapshot = snap;
    this.unstable = [];
    this.unstableOffset = snap.meta.index + 1;
  }
}
