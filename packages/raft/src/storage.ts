import {
  ClosedError,
  CompactedError,
  type ConfState,
  EMPTY_HARD_STATE,
  EMPTY_SNAPSHOT,
  type HardState,
  InvalidArgumentError,
  LogUnavailableError,
  type RaftEntry,
  type RaftLogStorage,
  type RaftLogUpdate,
  type RaftSnapshot,
} from '@parley/interface';
import { limitBytes } from './log.js';

function cloneConf(cs: ConfState): ConfState {
  return { voters: [...cs.voters], learners: [...cs.learners] };
}

/**
 * RaftLogStorage in memory. `ents[0]` is a dummy entry holding the index and
 * term of the last compacted entry (the snapshot point), so `term(firstIndex-1)`
 * always answers. Writes apply synchronously inside `save` and resolve at once.
 */
export class MemoryRaftStorage implements RaftLogStorage {
  private hard: HardState = { ...EMPTY_HARD_STATE };
  private snap: RaftSnapshot = EMPTY_SNAPSHOT;
  private ents: RaftEntry[] = [{ term: 0, index: 0, type: 'normal', data: new Uint8Array(0) }];
  private closed = false;

  /** Optional bootstrap state (e.g. a restored snapshot). */
  constructor(init?: { hardState?: HardState; snapshot?: RaftSnapshot; entries?: RaftEntry[] }) {
    if (init?.snapshot) this.applySnapshot(init.snapshot);
    if (init?.entries) this.appendEntries(init.entries);
    if (init?.hardState) this.hard = { ...init.hardState };
  }

  private check(): void {
    if (this.closed) throw new ClosedError('memory raft storage');
  }

  private get offset(): number {
    return (this.ents[0] as RaftEntry).index;
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    this.check();
    return { hardState: { ...this.hard }, confState: cloneConf(this.snap.meta.confState) };
  }

  entries(lo: number, hi: number, maxBytes?: number): RaftEntry[] {
    this.check();
    if (lo <= this.offset) throw new CompactedError(lo, this.offset + 1);
    const last = this.lastIndex();
    if (hi > last + 1) throw new LogUnavailableError(hi - 1, last);
    if (lo >= hi) return [];
    return limitBytes(this.ents.slice(lo - this.offset, hi - this.offset), maxBytes);
  }

  term(index: number): number {
    this.check();
    if (index < this.offset) throw new CompactedError(index, this.offset + 1);
    const last = this.lastIndex();
    if (index > last) throw new LogUnavailableError(index, last);
    return (this.ents[index - this.offset] as RaftEntry).term;
  }

  firstIndex(): number {
    this.check();
    return this.offset + 1;
  }

  lastIndex(): number {
    this.check();
    return this.offset + this.ents.length - 1;
  }

  snapshot(): RaftSnapshot {
    this.check();
    return this.snap;
  }

  /**
   * A new open handle on the same contents: what reopening a durable store
   * after close (or a crash) sees, since every save here is durable at once.
   */
  reopen(): MemoryRaftStorage {
    const s = new MemoryRaftStorage();
    s.hard = { ...this.hard };
    s.snap = this.snap;
    s.ents = this.ents.slice();
    return s;
  }

  private applySnapshot(s: RaftSnapshot): void {
    if (s.meta.index < this.snap.meta.index) return; // older than what we have: ignore
    this.snap = { meta: { ...s.meta, confState: cloneConf(s.meta.confState) }, data: s.data };
    const keep: RaftEntry[] = [];
    // Keep entries after the snapshot only if the log agrees with it at its index.
    const at = s.meta.index - this.offset;
    if (at >= 0 && at < this.ents.length && (this.ents[at] as RaftEntry).term === s.meta.term) {
      keep.push(...this.ents.slice(at + 1));
    }
    this.ents = [{ term: s.meta.term, index: s.meta.index, type: 'normal', data: new Uint8Array(0) }, ...keep];
  }

  private appendEntries(entries: readonly RaftEntry[]): void {
    if (entries.length === 0) return;
    const first = (entries[0] as RaftEntry).index;
    for (let i = 1; i < entries.length; i++) {
      if ((entries[i] as RaftEntry).index !== first + i) throw new InvalidArgumentError('entries are not contiguous');
    }
    if (first > this.lastIndex() + 1) {
      throw new InvalidArgumentError(`append at ${first} leaves a gap after ${this.lastIndex()}`);
    }
    if (first + entries.length - 1 <= this.offset) return; // entirely compacted already
    const skip = Math.max(0, this.offset + 1 - first);
    const keepUpTo = first + skip - this.offset; // ents[0..keepUpTo) stay
    this.ents.length = keepUpTo;
    for (let i = skip; i < entries.length; i++) this.ents.push(entries[i] as RaftEntry);
  }

  async save(update: RaftLogUpdate): Promise<void> {
    this.check();
    if (update.snapshot && update.entries?.length) {
      // Validate the whole batch before anything becomes visible (atomicity).
      const before = { snap: this.snap, ents: this.ents.slice() };
      try {
        this.applySnapshot(update.snapshot);
        this.appendEntries(update.entries);
      } catch (err) {
        this.snap = before.snap;
        this.ents = before.ents;
        throw err;
      }
    } else {
      if (update.snapshot) this.applySnapshot(update.snapshot);
      if (update.entries) this.appendEntries(update.entries);
    }
    if (update.hardState) this.hard = { ...update.hardState };
  }

  async createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<RaftSnapshot> {
    this.check();
    if (index <= this.snap.meta.index) throw new CompactedError(index, this.offset + 1);
    const last = this.lastIndex();
    if (index > last) throw new LogUnavailableError(index, last);
    this.snap = {
      meta: { index, term: (this.ents[index - this.offset] as RaftEntry).term, confState: cloneConf(confState) },
      data,
    };
    return this.snap;
  }

  async compact(index: number): Promise<void> {
    this.check();
    if (index < this.offset) throw new CompactedError(index, this.offset + 1);
    if (index === this.offset) return;
    if (index > this.snap.meta.index) {
      throw new InvalidArgumentError(`compact(${index}) is past the snapshot index ${this.snap.meta.index}`);
    }
    const at = index - this.offset;
    const head = this.ents[at] as RaftEntry;
    this.ents = [
      { term: head.term, index: head.index, type: 'normal', data: new Uint8Array(0) },
      ...this.ents.slice(at + 1),
    ];
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
