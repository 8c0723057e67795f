/**
 * The one in-memory `RaftLogStorage`, beside the contract it implements. Its
 * "disk" is a `MemoryRaftLogDisk`: a store reopened on the same disk sees every
 * write that resolved before, as after a restart. Each write is validated,
 * then applied atomically when it is made, so it is durable when its promise
 * resolves (and already visible to reads before that). It has no page cache:
 * an unsynced save (`sync: false`) is as durable as a synced one here; the
 * simulator's disk is the store that models losing it in a crash.
 *
 * @parley/raft (as `MemoryRaftStorage`) and @parley/storage re-export it; the
 * level store and the simulator's disk share its log state
 * (`RaftLogState`), so every store behaves the same at the edges:
 * - `createSnapshot` at the stored snapshot's index replaces it; below it is
 *   `compacted`; past the last index is `log_unavailable`;
 * - a `save` whose snapshot is older than the stored one is `invalid_argument`
 *   and changes nothing;
 * - `compact` past the snapshot index is `invalid_argument`; at or below the
 *   compaction point it is `compacted` (below) or a no-op (at).
 */
import { ClosedError, UnavailableError } from './errors.js';
import type { ConfState, HardState, RaftEntry, RaftLogStorage, RaftLogUpdate, RaftSnapshot } from './raft-log.js';
import { RaftLogState } from './raft-log-state.js';

/** The persistent contents a memory Raft log lives on; survives close and crash. */
export class MemoryRaftLogDisk {
  /** @internal */
  readonly state = new RaftLogState();
  /** @internal the store currently open on this disk */
  holder: object | undefined;
}

export interface MemoryRaftLogOptions {
  disk?: MemoryRaftLogDisk;
  /** Name used in errors (default 'memory'). */
  name?: string;
  /**
   * Initial contents of a new disk (e.g. a pre-built log in a test), saved as
   * one update: snapshot, then entries, then hard state.
   */
  snapshot?: RaftSnapshot;
  entries?: readonly RaftEntry[];
  hardState?: HardState;
}

function copySnapshot(s: RaftSnapshot): RaftSnapshot {
  return { meta: s.meta, data: s.data.slice() };
}

export class MemoryRaftLogStorage implements RaftLogStorage {
  readonly name: string;
  readonly disk: MemoryRaftLogDisk;
  private closed = false;

  constructor(options: MemoryRaftLogOptions = {}) {
    this.disk = options.disk ?? new MemoryRaftLogDisk();
    this.name = options.name ?? 'memory';
    if (this.disk.holder) throw new UnavailableError(`raft log '${this.name}' is already open`);
    if (options.snapshot || options.entries || options.hardState) {
      this.saveNow({ snapshot: options.snapshot, entries: options.entries, hardState: options.hardState });
    }
    this.disk.holder = this;
  }

  private get state(): RaftLogState {
    if (this.closed) throw new ClosedError(`raft log '${this.name}'`);
    return this.disk.state;
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return this.state.initialState();
  }
  entries(lo: number, hi: number, maxBytes?: number): RaftEntry[] {
    return this.state.entries(lo, hi, maxBytes);
  }
  term(index: number): number {
    return this.state.term(index);
  }
  firstIndex(): number {
    return this.state.firstIndex();
  }
  lastIndex(): number {
    return this.state.lastIndex();
  }
  snapshot(): RaftSnapshot {
    return this.state.snapshot();
  }

  async save(update: RaftLogUpdate): Promise<void> {
    this.saveNow(update);
  }

  private saveNow(update: RaftLogUpdate): void {
    const state = this.state;
    const plan = state.planSave(update);
    // Entry bytes are copied into the log's arena as they are applied.
    if (plan.snapshot) plan.snapshot = copySnapshot(plan.snapshot);
    state.applySave(plan);
  }

  async createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<RaftSnapshot> {
    const state = this.state;
    state.snapshotValue = copySnapshot(state.planCreateSnapshot(index, confState, data));
    return state.snapshotValue;
  }

  async compact(index: number): Promise<void> {
    const state = this.state;
    const point = state.planCompact(index);
    if (point) state.applyCompact(point);
  }

  /**
   * Closes this handle and opens a new one on the same disk: what a restart
   * sees, since every resolved write here is durable.
   */
  reopen(): MemoryRaftLogStorage {
    this.release();
    return new MemoryRaftLogStorage({ disk: this.disk, name: this.name });
  }

  /** Simulates a process crash: the store stops without a clean close; every resolved write is kept. */
  crash(): void {
    this.release();
  }

  async close(): Promise<void> {
    this.release();
  }

  private release(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.disk.holder === this) this.disk.holder = undefined;
  }
}

/** Opens a memory Raft log storage, on `options.disk` when given. */
export async function openMemoryRaftLog(options: MemoryRaftLogOptions = {}): Promise<MemoryRaftLogStorage> {
  return new MemoryRaftLogStorage(options);
}
