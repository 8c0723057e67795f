/**
 * Simulated disks. Each host owns one `SimDisk` that survives its crashes;
 * on it live named key/value stores (`KVStorage`) and Raft logs
 * (`RaftLogStorage`).
 *
 * Crash semantics — what a crash keeps:
 * - a write whose promise resolved is durable (synced stores: the default);
 * - a store opened with `syncWrites: false` acknowledges writes at once and
 *   makes them durable only at the next flush (every `flushIntervalMs`), so a
 *   crash loses the acknowledged-but-unflushed tail, as a page cache would;
 * - writes still in flight are lost, except that with `tornWriteRate` the
 *   last one may survive torn when it appended a new key with a single
 *   `save` (the tail of the store): the key then holds a strict prefix of the
 *   bytes written. Overwrites and batches stay atomic, as the contract says;
 *   an application that appends records must checksum them;
 * - Raft log saves are atomic: an unfinished save vanishes entirely (a real
 *   log detects its torn tail by checksum and truncates it). A save with
 *   `sync: false` resolves at once and becomes durable at the next synced
 *   write (with it, in issue order) or flush (`flushIntervalMs`); a crash
 *   before loses it whole. The Raft log is
 *   the memory implementation of @parley/interface (its `RaftLogState`)
 *   wrapped in this fault model, so it agrees with the memory and level
 *   stores at every edge.
 * With `readErrorRate`, a KV read fails with a retryable `UnavailableError`
 * (`details.transient === true`). Raft log reads are served from memory and
 * never fail, as the contract says.
 */
import {
  ClosedError,
  type ConfState,
  type HardState,
  type KVStorage,
  type RaftEntry,
  type RaftLogStorage,
  type RaftLogUpdate,
  type RaftSnapshot,
  type Random,
  type StorageChunk,
  type StorageKey,
  type StorageOp,
  UnavailableError,
} from '@parley/interface';
import { RaftLogState } from '@parley/interface/raft-log-kit';
import { between, chance, never, type SimKernel } from './kernel.js';
import type { QueuedEvent } from './queue.js';

export interface DiskFaults {
  /** Latency of a durable write (sync), drawn uniformly. Default 1..4 ms. */
  writeLatencyMs: { min: number; max: number };
  /** Probability that a crash leaves the last in-flight KV write torn. Default 0. */
  tornWriteRate: number;
  /** Probability that one KV read fails with a transient error. Default 0. */
  readErrorRate: number;
  /** Flush period of stores opened with `syncWrites: false`. Default 50 ms. */
  flushIntervalMs: number;
}

export const DEFAULT_DISK_FAULTS: DiskFaults = {
  writeLatencyMs: { min: 1, max: 4 },
  tornWriteRate: 0,
  readErrorRate: 0,
  flushIntervalMs: 50,
};

export interface KVStoreOptions {
  /** Default true: a write resolves once durable. False: resolves at once, durable at the next flush. */
  syncWrites?: boolean;
}

interface Row {
  key: string[];
  data: Uint8Array;
}

/** Element-wise order of string-array keys (a shorter prefix sorts first). */
export function compareKeys(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x !== y) return compareCodePoints(x, y);
  }
  return a.length - b.length;
}

/** Orders strings by Unicode code point (as LevelDB orders their UTF-8 bytes), not by UTF-16 unit. */
function compareCodePoints(x: string, y: string): number {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    let cx = x.charCodeAt(i);
    let cy = y.charCodeAt(i);
    if (cx === cy) continue;
    // Surrogates (U+D800..U+DFFF) encode code points above U+FFFF: move them past U+E000..U+FFFF.
    if (cx >= 0xd800 && cy >= 0xd800) {
      cx = cx >= 0xe000 ? cx - 0x800 : cx + 0x2000;
      cy = cy >= 0xe000 ? cy - 0x800 : cy + 0x2000;
    }
    return cx < cy ? -1 : 1;
  }
  return x.length - y.length;
}

function encodeKey(key: StorageKey): string {
  return JSON.stringify(key);
}

function hasPrefix(key: readonly string[], prefix: StorageKey): boolean {
  if (prefix.length > key.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

interface PendingWrite {
  ops: readonly StorageOp[];
  event: QueuedEvent | undefined;
  resolve: (() => void) | undefined;
}

/** The durable part of one KV store: what survives a crash. */
class KVTable {
  readonly rows = new Map<string, Row>();

  /** Applies ops the store already copied (they are never mutated afterwards). */
  apply(ops: readonly StorageOp[]): void {
    for (const op of ops) {
      const k = encodeKey(op.key);
      if (op.type === 'put') this.rows.set(k, { key: op.key as string[], data: op.data });
      else this.rows.delete(k);
    }
  }
}

/**
 * One host's disk. It outlives the host's crashes; `crash()` drops what was
 * not durable and invalidates every handle opened before it.
 */
export class SimDisk {
  private readonly tables = new Map<string, KVTable>();
  private readonly logs = new Map<string, RaftLogState>();
  private epoch = 0;
  private readonly openKV = new Set<SimKVStorage>();
  private readonly openLogs = new Set<SimRaftLogStorage>();

  constructor(
    readonly host: string,
    private readonly kernel: SimKernel,
    private readonly rng: Random,
    readonly faults: DiskFaults = DEFAULT_DISK_FAULTS,
  ) {}

  /** Opens (or reopens after a crash) the KV store `name`. */
  kv(name = 'default', options: KVStoreOptions = {}): KVStorage {
    let table = this.tables.get(name);
    if (!table) {
      table = new KVTable();
      this.tables.set(name, table);
    }
    const store = new SimKVStorage(this, name, table, options.syncWrites ?? true, this.kernel, this.rng);
    this.openKV.add(store);
    return store;
  }

  /** Opens (or reopens after a crash) the Raft log `name`. */
  raftLog(name = 'raft'): RaftLogStorage {
    let durable = this.logs.get(name);
    if (!durable) {
      durable = new RaftLogState();
      this.logs.set(name, durable);
    }
    const log = new SimRaftLogStorage(name, durable, this.kernel, this.rng, this.faults);
    this.openLogs.add(log);
    return log;
  }

  /** Power loss: unsynced writes vanish (or tear), every open handle goes dead. */
  crash(): void {
    this.epoch++;
    for (const store of this.openKV) store.crash();
    for (const log of this.openLogs) log.crash();
    this.openKV.clear();
    this.openLogs.clear();
  }

  get generation(): number {
    return this.epoch;
  }

  /** Durable keys of a KV store (for checkers and tests). */
  durableKeys(name = 'default'): string[][] {
    const table = this.tables.get(name);
    if (!table) return [];
    return [...table.rows.values()].map((r) => r.key).sort(compareKeys);
  }

  /** @internal */
  closed(store: SimKVStorage): void {
    this.openKV.delete(store);
  }
}

export class SimKVStorage implements KVStorage {
  /** Writes applied in memory but not yet durable, oldest first. */
  private readonly pending: PendingWrite[] = [];
  private dead = false;
  private closedFlag = false;
  private flushEvent: QueuedEvent | undefined;

  constructor(
    private readonly disk: SimDisk,
    readonly name: string,
    private readonly table: KVTable,
    private readonly syncWrites: boolean,
    private readonly kernel: SimKernel,
    private readonly rng: Random,
  ) {}

  load(key: StorageKey): Promise<Uint8Array | undefined> {
    const gate = this.readGate<Uint8Array | undefined>();
    if (gate) return gate;
    const k = encodeKey(key);
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const ops = this.pending[i]!.ops;
      for (let j = ops.length - 1; j >= 0; j--) {
        const op = ops[j]!;
        if (encodeKey(op.key) === k) return Promise.resolve(op.type === 'put' ? op.data.slice() : undefined);
      }
    }
    const row = this.table.rows.get(k);
    return Promise.resolve(row?.data.slice());
  }

  loadRange(prefix: StorageKey): Promise<StorageChunk[]> {
    const gate = this.readGate<StorageChunk[]>();
    if (gate) return gate;
    const view = new Map<string, Row | undefined>();
    for (const row of this.table.rows.values()) if (hasPrefix(row.key, prefix)) view.set(encodeKey(row.key), row);
    for (const w of this.pending) {
      for (const op of w.ops) {
        if (!hasPrefix(op.key, prefix)) continue;
        view.set(encodeKey(op.key), op.type === 'put' ? { key: [...op.key], data: op.data } : undefined);
      }
    }
    const rows = [...view.values()].filter((r): r is Row => r !== undefined).sort((a, b) => compareKeys(a.key, b.key));
    return Promise.resolve(rows.map((r) => ({ key: [...r.key], data: r.data.slice() })));
  }

  save(key: StorageKey, data: Uint8Array): Promise<void> {
    return this.write([{ type: 'put', key, data }]);
  }

  remove(key: StorageKey): Promise<void> {
    return this.write([{ type: 'del', key }]);
  }

  removeRange(prefix: StorageKey): Promise<void> {
    if (this.dead) return never();
    if (this.closedFlag) return Promise.reject(new ClosedError(`store '${this.name}'`));
    // Deletes every key under the prefix as seen now (durable and in flight).
    const keys = new Map<string, string[]>();
    for (const row of this.table.rows.values()) if (hasPrefix(row.key, prefix)) keys.set(encodeKey(row.key), row.key);
    for (const w of this.pending)
      for (const op of w.ops) if (hasPrefix(op.key, prefix)) keys.set(encodeKey(op.key), [...op.key]);
    return this.write([...keys.values()].map((key) => ({ type: 'del' as const, key })));
  }

  batch(ops: readonly StorageOp[]): Promise<void> {
    return this.write(ops);
  }

  close(): Promise<void> {
    if (this.dead) return never();
    if (this.closedFlag) return Promise.resolve();
    this.closedFlag = true;
    // A clean close flushes what is pending, as a real store does.
    for (const w of this.pending.splice(0)) {
      if (w.event) this.kernel.cancel(w.event);
      this.table.apply(w.ops);
      w.resolve?.();
    }
    if (this.flushEvent) this.kernel.cancel(this.flushEvent);
    this.disk.closed(this);
    return Promise.resolve();
  }

  /** @internal Called by the disk on power loss. */
  crash(): void {
    this.dead = true;
    if (this.flushEvent) this.kernel.cancel(this.flushEvent);
    const last = this.pending[this.pending.length - 1];
    for (const w of this.pending) if (w.event) this.kernel.cancel(w.event);
    const op = last?.ops.length === 1 ? last.ops[0] : undefined;
    if (op?.type === 'put' && !this.table.rows.has(encodeKey(op.key)) && op.data.length > 0) {
      if (chance(this.rng, this.disk.faults.tornWriteRate)) {
        const keptBytes = this.rng.int(op.data.length);
        this.table.rows.set(encodeKey(op.key), { key: [...op.key], data: op.data.slice(0, keptBytes) });
        this.kernel.trace(
          `disk ${this.disk.host}/${this.name} torn ${encodeKey(op.key)} ${keptBytes}/${op.data.length}`,
        );
        this.pending.pop();
      }
    }
    if (this.pending.length > 0) this.kernel.trace(`disk ${this.disk.host}/${this.name} lost ${this.pending.length}`);
    this.pending.length = 0;
  }

  private readGate<T>(): Promise<T> | undefined {
    if (this.dead) return never();
    if (this.closedFlag) return Promise.reject(new ClosedError(`store '${this.name}'`));
    if (chance(this.rng, this.disk.faults.readErrorRate)) {
      this.kernel.trace(`disk ${this.disk.host}/${this.name} read-error`);
      return Promise.reject(
        new UnavailableError(`read error on store '${this.name}'`, { store: this.name, transient: true }),
      );
    }
    return undefined;
  }

  private write(ops: readonly StorageOp[]): Promise<void> {
    if (this.dead) return never();
    if (this.closedFlag) return Promise.reject(new ClosedError(`store '${this.name}'`));
    const copy = ops.map((op) =>
      op.type === 'put'
        ? { type: 'put' as const, key: [...op.key], data: op.data.slice() }
        : { type: 'del' as const, key: [...op.key] },
    );
    const w: PendingWrite = { ops: copy, event: undefined, resolve: undefined };
    this.pending.push(w);
    if (!this.syncWrites) {
      this.scheduleFlush();
      return Promise.resolve();
    }
    const { min, max } = this.disk.faults.writeLatencyMs;
    return new Promise<void>((resolve) => {
      w.resolve = resolve;
      w.event = this.kernel.schedule(between(this.rng, min, max), 'disk-sync', () => {
        // A sync makes this write and every earlier one durable, in issue order.
        const idx = this.pending.indexOf(w);
        if (idx < 0) return;
        for (const done of this.pending.splice(0, idx + 1)) {
          if (done !== w && done.event) this.kernel.cancel(done.event);
          this.table.apply(done.ops);
          done.resolve?.();
        }
      });
    });
  }

  private scheduleFlush(): void {
    if (this.flushEvent && !this.flushEvent.cancelled) return;
    this.flushEvent = this.kernel.schedule(this.disk.faults.flushIntervalMs, 'disk-flush', () => {
      this.flushEvent = undefined;
      for (const w of this.pending.splice(0)) {
        if (w.event) this.kernel.cancel(w.event);
        this.table.apply(w.ops);
        w.resolve?.();
      }
    });
  }
}

// --- Raft log -------------------------------------------------------------

type LogOp =
  | { type: 'update'; update: RaftLogUpdate }
  | { type: 'snapshot'; index: number; confState: ConfState; data: Uint8Array }
  | { type: 'compact'; index: number };

function copySnapshot(s: RaftSnapshot): RaftSnapshot {
  return { meta: s.meta, data: s.data.slice() };
}

/**
 * Validates `op` against `s` and applies it by the rules of the one memory
 * Raft log (`RaftLogState` of @parley/interface, which the memory and level
 * stores share); throws their typed errors before changing anything.
 */
function applyLogOp(s: RaftLogState, op: LogOp): void {
  switch (op.type) {
    case 'update': {
      const plan = s.planSave(op.update);
      if (plan.snapshot) plan.snapshot = copySnapshot(plan.snapshot);
      s.applySave(plan);
      return;
    }
    case 'snapshot':
      s.snapshotValue = copySnapshot(s.planCreateSnapshot(op.index, op.confState, op.data));
      return;
    case 'compact': {
      const point = s.planCompact(op.index);
      if (point) s.applyCompact(point);
      return;
    }
  }
}

interface PendingLogOp {
  op: LogOp;
  /** The sync that makes it durable; undefined for an unsynced save waiting for the next sync or flush. */
  event: QueuedEvent | undefined;
  resolve: (() => void) | undefined;
}

/**
 * A `RaftLogStorage` on a simulated disk: the memory Raft log wrapped in the
 * disk's fault model. Reads come from memory, where each write applies at
 * once; the disk's copy (`durable`) takes each write, in issue order, only
 * after a simulated sync, and a crash loses every write not synced yet.
 */
export class SimRaftLogStorage implements RaftLogStorage {
  private readonly mem: RaftLogState;
  private readonly pending: PendingLogOp[] = [];
  private dead = false;
  private closedFlag = false;
  private flushEvent: QueuedEvent | undefined;

  constructor(
    readonly name: string,
    private readonly durable: RaftLogState,
    private readonly kernel: SimKernel,
    private readonly rng: Random,
    private readonly faults: DiskFaults,
  ) {
    this.mem = durable.clone();
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return this.mem.initialState();
  }

  entries(lo: number, hi: number, maxBytes?: number): RaftEntry[] {
    return this.mem.entries(lo, hi, maxBytes);
  }

  term(index: number): number {
    return this.mem.term(index);
  }

  firstIndex(): number {
    return this.mem.firstIndex();
  }

  lastIndex(): number {
    return this.mem.lastIndex();
  }

  snapshot(): RaftSnapshot {
    return this.mem.snapshot();
  }

  save(update: RaftLogUpdate): Promise<void> {
    return this.persist({ type: 'update', update }, update.sync !== false);
  }

  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<RaftSnapshot> {
    return this.persist({ type: 'snapshot', index, confState, data }).then(() => this.snapshot());
  }

  compact(index: number): Promise<void> {
    return this.persist({ type: 'compact', index });
  }

  close(): Promise<void> {
    if (this.dead) return never();
    this.closedFlag = true;
    return Promise.resolve();
  }

  /** @internal Called by the disk on power loss: unsynced saves vanish whole. */
  crash(): void {
    this.dead = true;
    if (this.flushEvent) this.kernel.cancel(this.flushEvent);
    for (const p of this.pending) if (p.event) this.kernel.cancel(p.event);
    if (this.pending.length > 0) this.kernel.trace(`disk raft/${this.name} lost ${this.pending.length}`);
    this.pending.length = 0;
  }

  private persist(op: LogOp, sync = true): Promise<void> {
    if (this.dead) return never();
    if (this.closedFlag) return Promise.reject(new ClosedError(`raft log '${this.name}'`));
    try {
      applyLogOp(this.mem, op);
    } catch (err) {
      return Promise.reject(err);
    }
    if (!sync) {
      // In the page cache: acknowledged at once, durable at the next sync or flush, lost in a crash before.
      this.pending.push({ op, event: undefined, resolve: undefined });
      this.scheduleFlush();
      return Promise.resolve();
    }
    const { min, max } = this.faults.writeLatencyMs;
    return new Promise<void>((resolve) => {
      const p: PendingLogOp = {
        op,
        resolve,
        event: this.kernel.schedule(between(this.rng, min, max), 'raft-sync', () => {
          const idx = this.pending.indexOf(p);
          if (idx < 0) return;
          // A sync makes this save and every earlier one durable, in issue order. The disk's
          // copy went through the same writes before, so each applies there as it did in memory.
          this.makeDurable(idx + 1);
        }),
      };
      this.pending.push(p);
    });
  }

  private makeDurable(count: number): void {
    for (const done of this.pending.splice(0, count)) {
      if (done.event) this.kernel.cancel(done.event);
      applyLogOp(this.durable, done.op);
      done.resolve?.();
    }
  }

  private scheduleFlush(): void {
    if (this.flushEvent && !this.flushEvent.cancelled) return;
    this.flushEvent = this.kernel.schedule(this.faults.flushIntervalMs, 'raft-flush', () => {
      this.flushEvent = undefined;
      // The page cache reaches the disk, in issue order, up to the last unsynced save: a synced
      // save after it is still waiting for its own sync, and earlier ones go with it.
      let last = -1;
      for (let i = 0; i < this.pending.length; i++) if (!this.pending[i]!.event) last = i;
      this.makeDurable(last + 1);
    });
  }
}
