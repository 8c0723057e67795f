/**
 * RaftLogStorage in memory, the twin of the level Raft log. Its "disk" is a
 * `MemoryRaftLogDisk`: a store reopened on the same disk sees every write that
 * resolved before, as after a restart. Each write applies atomically when it
 * is made.
 */
import {
  ClosedError,
  type ConfState,
  type HardState,
  type RaftEntry,
  type RaftLogStorage,
  type RaftLogUpdate,
  type RaftSnapshot,
  UnavailableError,
} from '@parley/interface';
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
}

function copyBytes(b: Uint8Array): Uint8Array {
  return b.slice();
}

export class MemoryRaftLogStorage implements RaftLogStorage {
  readonly name: string;
  readonly disk: MemoryRaftLogDisk;
  private closed = false;

  constructor(options: MemoryRaftLogOptions = {}) {
    this.disk = options.disk ?? new MemoryRaftLogDisk();
    this.name = options.name ?? 'memory';
    if (this.disk.holder) throw new UnavailableError(`raft log '${this.name}' is already open`);
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
    const state = this.state;
    const plan = state.planSave(update);
    // Entry bytes are copied into the log's arena as they are applied.
    if (plan.snapshot) plan.snapshot = { meta: plan.snapshot.meta, data: copyBytes(plan.snapshot.data) };
    state.applySave(plan);
  }

  async createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<RaftSnapshot> {
    const state = this.state;
    const snap = state.planCreateSnapshot(index, confState, data);
    state.snapshotValue = { meta: snap.meta, data: copyBytes(data) };
    return state.snapshotValue;
  }

  async compact(index: number): Promise<void> {
    const state = this.state;
    const point = state.planCompact(index);
    if (point) state.applyCompact(point);
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
