/**
 * RaftLogStorage on LevelDB. The whole log (from the compaction point on), the
 * hard state and the snapshot are loaded into memory on open and checked
 * record by record; reads are then synchronous. Each write is one LevelDB
 * batch, written with `{ sync: true }` by default (`{ sync: false }` for an
 * update that says `sync: false`), and applied to memory only once LevelDB
 * has taken it. Disk failures are typed (`storage_full`, `storage_unwritable`,
 * `storage_failed`), and after the first failed write every later write is
 * refused with the same code until the log is reopened.
 */
import {
  ClosedError,
  type ConfState,
  type HardState,
  type RaftEntry,
  type RaftLogStorage,
  type RaftLogUpdate,
  type RaftSnapshot,
  StorageCorruptError,
} from '@parley/interface';
import { type LevelDb, mapLevelError, openLevelDb, WriteFault } from './errors.js';
import {
  decodeHardState,
  decodeOffset,
  decodeSnapshot,
  ENTRY_RANGE,
  encodeEntry,
  encodeHardState,
  encodeOffset,
  encodeSnapshot,
  entryKey,
  entryKeyIndex,
  HARD_STATE_KEY,
  loadEntryInto,
  OFFSET_KEY,
  SNAPSHOT_KEY,
} from './raft-codec.js';
import { RaftLogState, type SavePlan } from './raft-log-state.js';
import { bytesView } from './record.js';

export interface LevelRaftLogOptions {
  /** Directory of the LevelDB database; created when missing. */
  path: string;
  /** fsync every write before it resolves (default true). Raft's safety depends on it. */
  sync?: boolean;
  /** Name used in errors (default: the path). */
  name?: string;
}

type Db = LevelDb;
type Op = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

const LOAD_STEP = 4_096;

export class LevelRaftLogStorage implements RaftLogStorage {
  readonly name: string;
  private closed = false;
  /** Writes run one at a time: each is planned against the state the previous one left. */
  private tail: Promise<unknown> = Promise.resolve();
  /** The first failed write: later writes are refused with its code (see WriteFault). */
  readonly fault: WriteFault;

  private constructor(
    private readonly db: Db,
    private readonly state: RaftLogState,
    private readonly sync: boolean,
    name: string,
  ) {
    this.name = name;
    this.fault = new WriteFault(name);
  }

  static async open(options: LevelRaftLogOptions): Promise<LevelRaftLogStorage> {
    const name = options.name ?? options.path;
    const db = await openLevelDb(options.path, name);
    try {
      const state = await load(db, name);
      return new LevelRaftLogStorage(db, state, options.sync ?? true, name);
    } catch (err) {
      await db.close();
      mapLevelError(name, err);
    }
  }

  private check(): void {
    if (this.closed) throw new ClosedError(`raft log '${this.name}'`);
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    this.check();
    return this.state.initialState();
  }
  entries(lo: number, hi: number, maxBytes?: number): RaftEntry[] {
    this.check();
    return this.state.entries(lo, hi, maxBytes);
  }
  term(index: number): number {
    this.check();
    return this.state.term(index);
  }
  firstIndex(): number {
    this.check();
    return this.state.firstIndex();
  }
  lastIndex(): number {
    this.check();
    return this.state.lastIndex();
  }
  snapshot(): RaftSnapshot {
    this.check();
    return this.state.snapshot();
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async write(ops: Op[], sync = true): Promise<void> {
    this.fault.check();
    try {
      await this.db.batch(ops, { sync: this.sync && sync });
    } catch (err) {
      this.fault.fail(err);
    }
  }

  save(update: RaftLogUpdate): Promise<void> {
    return this.serial(async () => {
      this.check();
      const plan = this.state.planSave(update);
      const { ops, append } = this.saveOps(plan);
      // An update that asks for no sync (a commit index alone moved) is written without fsync: a
      // crash may lose it whole, and LevelDB's next synced write makes it durable with itself.
      await this.write(ops, update.sync !== false);
      this.state.applySave({ ...plan, append });
    });
  }

  private saveOps(plan: SavePlan): { ops: Op[]; append: RaftEntry[] } {
    const s = this.state;
    const ops: Op[] = [];
    if (plan.snapshot) {
      const value = encodeSnapshot(plan.snapshot);
      ops.push({ type: 'put', key: SNAPSHOT_KEY, value });
      // As for entries below: memory keeps a view of the stored bytes, not the caller's buffer.
      const dataBytes = plan.snapshot.data.length;
      plan.snapshot = { meta: plan.snapshot.meta, data: bytesView(value, value.length - dataBytes) };
    }
    if (plan.offset) ops.push({ type: 'put', key: OFFSET_KEY, value: encodeOffset(plan.offset) });
    const lastIndex = s.lastIndex();
    // Entries at or below the new compaction point go, then whatever the new entries do not overwrite of a
    // truncated suffix. Both are ranges, so a save costs what it changes, not the length of the log.
    const newOffset = plan.offset?.index ?? s.offsetIndex;
    for (let i = s.firstIndex(); i <= Math.min(newOffset, lastIndex); i++) ops.push({ type: 'del', key: entryKey(i) });
    const newLast = plan.append.length > 0 ? plan.append[plan.append.length - 1]!.index : 0;
    if (plan.truncateFrom !== undefined) {
      for (let i = Math.max(plan.truncateFrom, newOffset + 1, newLast + 1); i <= lastIndex; i++) {
        ops.push({ type: 'del', key: entryKey(i) });
      }
    }
    const append: RaftEntry[] = [];
    for (const e of plan.append) {
      const key = entryKey(e.index);
      const value = encodeEntry(key, e);
      ops.push({ type: 'put', key, value });
      // Memory keeps a view of the encoded record: one copy, and immune to the caller reusing its buffer.
      append.push({ term: e.term, index: e.index, type: e.type, data: bytesView(value, value.length - e.data.length) });
    }
    if (plan.hardState) ops.push({ type: 'put', key: HARD_STATE_KEY, value: encodeHardState(plan.hardState) });
    return { ops, append };
  }

  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<RaftSnapshot> {
    return this.serial(async () => {
      this.check();
      const snap = this.state.planCreateSnapshot(index, confState, data);
      const value = encodeSnapshot(snap);
      await this.write([{ type: 'put', key: SNAPSHOT_KEY, value }]);
      const stored = { meta: snap.meta, data: bytesView(value, value.length - data.length) };
      this.state.snapshotValue = stored;
      return stored;
    });
  }

  compact(index: number): Promise<void> {
    return this.serial(async () => {
      this.check();
      const point = this.state.planCompact(index);
      if (!point) return;
      const ops: Op[] = [{ type: 'put', key: OFFSET_KEY, value: encodeOffset(point) }];
      for (let i = this.state.firstIndex(); i <= point.index; i++) ops.push({ type: 'del', key: entryKey(i) });
      await this.write(ops);
      this.state.applyCompact(point);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    await this.db.close();
  }
}

async function load(db: Db, name: string): Promise<RaftLogState> {
  const state = new RaftLogState();
  const [hs, off, snap] = await db.getMany([HARD_STATE_KEY, OFFSET_KEY, SNAPSHOT_KEY]);
  if (hs) state.hardState = decodeHardState(name, hs);
  if (off) {
    const o = decodeOffset(name, off);
    state.offsetIndex = o.index;
    state.offsetTerm = o.term;
  }
  if (snap) state.snapshotValue = decodeSnapshot(name, snap);
  let expect = state.offsetIndex + 1;
  const it = db.iterator(ENTRY_RANGE);
  try {
    // Ask LevelDB for the next step before checking this one, so reading and checking overlap.
    let step = await it.nextv(LOAD_STEP);
    while (step.length > 0) {
      const next = it.nextv(LOAD_STEP);
      next.catch(() => undefined);
      for (let i = 0; i < step.length; i++) {
        const [key, value] = step[i]!;
        const index = entryKeyIndex(name, key);
        if (index < expect) continue; // at or below the compaction point: already discarded
        if (index !== expect) {
          throw new StorageCorruptError(name, `entry ${expect} is missing (next stored entry is ${index})`);
        }
        loadEntryInto(name, key, value, index, state.columns);
        expect++;
      }
      step = await next;
    }
  } finally {
    await it.close();
  }
  const last = state.lastIndex();
  if (state.hardState.commit > last) {
    throw new StorageCorruptError(
      name,
      `committed entries are missing: commit index ${state.hardState.commit}, last stored entry ${last}`,
    );
  }
  if (state.snapshotValue.meta.index < state.offsetIndex) {
    throw new StorageCorruptError(
      name,
      `the log is compacted through ${state.offsetIndex} but the snapshot is only at ${state.snapshotValue.meta.index}`,
    );
  }
  return state;
}

/** Opens a LevelDB-backed Raft log storage, loading its log into memory. */
export function openLevelRaftLog(options: LevelRaftLogOptions): Promise<LevelRaftLogStorage> {
  return LevelRaftLogStorage.open(options);
}
