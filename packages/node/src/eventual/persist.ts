/**
 * How one eventual namespace lives on disk (in the node's KV store):
 *
 *   ['ev', ns, 'l', <12-digit seq>]  a log record: the deltas of one group commit
 *                                     (varint n, then n length-prefixed encoded deltas)
 *   ['ev', ns, 'm']                   meta: JSON {incarnation, lastContactMs, replicas, open}
 *   ['ev', ns, 's', <6-digit chunk>]  the latest snapshot: encoded states of up to
 *                                     SNAPSHOT_CHUNK_STATES keys per chunk; the last
 *                                     chunk carries the dot context
 *
 * Every record ends with the CRC-32C of the rest. A record whose checksum
 * fails was being written when the process died (an append that was never
 * acknowledged: a store may keep a torn prefix of a new key), so restore
 * drops it, counts it and deletes it; a record that passes its checksum but
 * does not decode is corruption (`storage_corrupt`).
 *
 * A snapshot folds the log once the log holds at least as many bytes as the
 * snapshot (and `compactLogBytes`), so rewriting costs O(1) per logged byte.
 * Snapshot, log deletion and meta go in one atomic batch. Deltas merge in any
 * order; restore merges the snapshot before the log only because that is faster.
 */
import {
  type Delta,
  decodeDelta,
  decodeState,
  encodeDelta,
  encodeState,
  joinDeltas,
  type KeyState,
  type NamespaceReplica,
} from '@parley/crdt';
import {
  ByteReader,
  ByteWriter,
  isParleyError,
  type KVStorage,
  type StorageChunk,
  StorageCorruptError,
  type StorageOp,
} from '@parley/interface';
import { crc32c } from '@parley/storage';

export const SNAPSHOT_CHUNK_STATES = 4096;

export interface NamespaceMeta {
  incarnation: number;
  /** Last completed anti-entropy round with a peer (physical ms), or null if never. */
  lastContactMs: number | null;
  /** Peers known to replicate this namespace, with when each was last heard from (see KnownReplicas). */
  replicas?: Array<[string, number] | string>;
  /**
   * Set (durably) when the namespace opens with `gossipBeforeDurable` and cleared by a clean
   * close: found set on restore, the last run may have gossiped writes it never made durable.
   */
  open?: boolean;
}

const pad = (n: number, width: number) => n.toString().padStart(width, '0');

/** `payload` followed by its CRC-32C (4 bytes, big-endian). */
export function appendChecksum(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 4);
  out.set(payload);
  new DataView(out.buffer).setUint32(payload.length, crc32c(payload) >>> 0);
  return out;
}

/** The payload of a record made by appendChecksum, or undefined when its checksum fails (a torn write). */
export function stripChecksum(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length < 4) return undefined;
  const end = bytes.length - 4;
  const sum = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(end);
  return sum === crc32c(bytes, 0, 0, end) >>> 0 ? bytes.subarray(0, end) : undefined;
}

function corrupt(ns: string, what: string, err: unknown): StorageCorruptError {
  return new StorageCorruptError(`eventual/${ns}`, `${what}: ${String((err as Error)?.message ?? err)}`);
}

/** What restore found on disk. */
export interface LoadedNamespace {
  meta: NamespaceMeta;
  deltas: Delta[];
  /** Largest stamp wall time of any stored state (restore merges at max(now, this)). */
  maxWallMs: number;
  logKeys: string[][];
  logBytes: number;
  nextLogSeq: number;
  snapKeys: string[][];
  snapBytes: number;
  /** Records whose checksum failed (torn, never acknowledged): dropped, and deleted by the next batch. */
  tornKeys: string[][];
}

export function maxWallOf(state: KeyState): number {
  let w = state.wallMs;
  if (state.type === 'counter') for (const s of state.shares.values()) if (s.wallMs > w) w = s.wallMs;
  return w;
}

export async function loadNamespace(kv: KVStorage, ns: string): Promise<LoadedNamespace> {
  const chunks: StorageChunk[] = await kv.loadRange(['ev', ns]);
  const out: LoadedNamespace = {
    meta: { incarnation: 0, lastContactMs: null },
    deltas: [],
    maxWallMs: 0,
    logKeys: [],
    logBytes: 0,
    nextLogSeq: 0,
    snapKeys: [],
    snapBytes: 0,
    tornKeys: [],
  };
  // Snapshot chunks first, then the log: the chunks hold each origin's writes in ascending
  // runs and the log the writes after them, so the replica's dot index only ever appends
  // (log records first would put every snapshot dot behind them, out of order).
  const logDeltas: Delta[] = [];
  for (const c of chunks) {
    if (c.key.length < 3) continue;
    const kind = c.key[2];
    if (kind === 'l') out.nextLogSeq = Math.max(out.nextLogSeq, Number(c.key[3]) + 1);
    const data = stripChecksum(c.data);
    if (data === undefined) {
      out.tornKeys.push(c.key);
      continue;
    }
    try {
      if (kind === 'm') {
        const m = JSON.parse(new TextDecoder().decode(data)) as NamespaceMeta;
        if (!Number.isSafeInteger(m.incarnation) || m.incarnation < 0) throw new Error('bad incarnation');
        // Pairs [peer, lastHeardMs]; a meta written before ages were kept holds bare peer ids.
        const replicas = Array.isArray(m.replicas)
          ? m.replicas.filter(
              (r) =>
                typeof r === 'string' ||
                (Array.isArray(r) && r.length === 2 && typeof r[0] === 'string' && Number.isSafeInteger(r[1])),
            )
          : [];
        out.meta = { incarnation: m.incarnation, lastContactMs: m.lastContactMs ?? null, replicas };
        if (m.open === true) out.meta.open = true;
      } else if (kind === 'l') {
        const r = new ByteReader(data);
        const n = r.count(1);
        for (let i = 0; i < n; i++) logDeltas.push(decodeDelta(r.bytes()));
        r.end();
        out.logKeys.push(c.key);
        out.logBytes += c.data.length;
      } else if (kind === 's') {
        out.deltas.push(decodeState(data));
        out.snapKeys.push(c.key);
        out.snapBytes += c.data.length;
      }
    } catch (err) {
      if (isParleyError(err) && err.code === 'storage_corrupt') throw err;
      throw corrupt(ns, `record ${JSON.stringify(c.key)} does not decode`, err);
    }
  }
  for (const d of logDeltas) out.deltas.push(d);
  for (const d of out.deltas) for (const s of d.states) out.maxWallMs = Math.max(out.maxWallMs, maxWallOf(s));
  return out;
}

/** Registers and tombstones by (node, seq); counters (several dots each) after them, by key. */
function byDot(a: KeyState, b: KeyState): number {
  const ac = a.type === 'counter';
  const bc = b.type === 'counter';
  if (ac !== bc) return ac ? 1 : -1;
  if (ac && bc) return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  const x = a as Exclude<KeyState, { type: 'counter' }>;
  const y = b as Exclude<KeyState, { type: 'counter' }>;
  if (x.node !== y.node) return x.node < y.node ? -1 : 1;
  return x.seq - y.seq;
}

/**
 * A local write waiting for the batch that makes it durable: applied to the
 * replica once that batch is on disk, failed (and never applied) with it.
 */
export interface LocalWrite {
  readonly delta: Delta;
  readonly bytes: Uint8Array;
  /** The replica it was prepared on (a new incarnation fails what the old one prepared). */
  readonly replica: NamespaceReplica;
  outcome: 'pending' | 'applied' | 'failed';
  error?: unknown;
}

/** A pending record: a local write's delta, or a merged remote one (already applied in memory). */
interface PendingRecord {
  bytes: Uint8Array;
  local?: LocalWrite;
}

/** Remote records kept for the next batch after a failed one; beyond, the next batch writes a snapshot. */
export const MAX_REQUEUED_BYTES = 8 * 1024 * 1024;

interface Bookkeeping {
  logKeys: string[][];
  /** How many of `logKeys` there were (a log record appends to the same array in place). */
  logCount: number;
  logBytes: number;
  nextLogSeq: number;
  snapKeys: string[][];
  snapBytes: number;
  drop: string[][];
  metaDirty: boolean;
  snapshotDue: boolean;
}

/** Keeps the bookkeeping of one namespace's records and turns pending deltas into storage ops. */
export class NamespaceStore {
  private pending: PendingRecord[] = [];
  private pendingBytes = 0;
  private logKeys: string[][] = [];
  private logBytes = 0;
  private nextLogSeq = 0;
  private snapKeys: string[][] = [];
  private snapBytes = 0;
  private drop: string[][] = [];
  private metaDirty = false;
  /** Remote deltas merged in memory were not written (a failed batch): the next batch writes a snapshot. */
  private snapshotDue = false;
  /** What the batch in flight holds, and the bookkeeping to go back to if it fails. */
  private inflight: { records: PendingRecord[]; before: Bookkeeping } | undefined;
  meta: NamespaceMeta = { incarnation: 0, lastContactMs: null };

  constructor(
    private readonly ns: string,
    private readonly compactLogBytes: number,
  ) {}

  adopt(loaded: LoadedNamespace): void {
    this.drop.push(...loaded.tornKeys);
    this.meta = loaded.meta;
    this.logKeys = loaded.logKeys;
    this.logBytes = loaded.logBytes;
    this.nextLogSeq = loaded.nextLogSeq;
    this.snapKeys = loaded.snapKeys;
    this.snapBytes = loaded.snapBytes;
  }

  /** Bytes on disk (snapshot + log), for status. */
  get bytes(): number {
    return this.snapBytes + this.logBytes + this.pendingBytes;
  }

  get hasPending(): boolean {
    return this.pending.length > 0 || this.metaDirty || this.drop.length > 0 || this.snapshotDue;
  }

  /** Queues a merged remote delta (already applied in memory) for the next batch. */
  append(delta: Uint8Array): void {
    this.pending.push({ bytes: delta });
    this.pendingBytes += delta.length;
  }

  /** Queues a prepared local write; the namespace applies it once its batch is durable. */
  appendLocal(delta: Delta, bytes: Uint8Array, replica: NamespaceReplica): LocalWrite {
    const local: LocalWrite = { delta, bytes, replica, outcome: 'pending' };
    this.pending.push({ bytes, local });
    this.pendingBytes += bytes.length;
    return local;
  }

  setMeta(meta: NamespaceMeta): void {
    this.meta = meta;
    this.metaDirty = true;
  }

  /**
   * Forgets everything stored (the next batch deletes it); used by a new
   * incarnation. Local writes not yet applied fail with `reason`.
   */
  discardAll(reason: Error): void {
    this.drop.push(...this.logKeys, ...this.snapKeys);
    this.logKeys = [];
    this.snapKeys = [];
    this.logBytes = 0;
    this.snapBytes = 0;
    this.snapshotDue = false;
    for (const r of this.pending) if (r.local) this.failLocal(r.local, reason);
    this.pending = [];
    this.pendingBytes = 0;
    if (this.inflight) {
      // Should the batch in flight fail, there is nothing to go back to: every key is in `drop`.
      const before = this.inflight.before;
      this.inflight.before = {
        ...before,
        logKeys: [],
        logCount: 0,
        logBytes: 0,
        snapKeys: [],
        snapBytes: 0,
        snapshotDue: false,
      };
      for (const r of this.inflight.records) if (r.local) this.failLocal(r.local, reason);
    }
  }

  /**
   * The operations of the next batch. `replica` (which holds what is applied:
   * durable local writes and merged remote deltas) is read only when a
   * snapshot is due; local writes not yet applied then go in a log record
   * beside it.
   */
  collect(replica: NamespaceReplica): StorageOp[] {
    const before: Bookkeeping = {
      logKeys: this.logKeys,
      logCount: this.logKeys.length,
      logBytes: this.logBytes,
      nextLogSeq: this.nextLogSeq,
      snapKeys: this.snapKeys,
      snapBytes: this.snapBytes,
      drop: this.drop,
      metaDirty: this.metaDirty,
      snapshotDue: this.snapshotDue,
    };
    const records = this.pending;
    this.inflight = { records, before };
    const ops: StorageOp[] = [];
    for (const key of this.drop) ops.push({ type: 'del', key });
    this.drop = [];
    if (records.length > 0 || this.snapshotDue) {
      let logged = records;
      if (this.snapshotDue || this.logBytes + this.pendingBytes >= Math.max(this.compactLogBytes, this.snapBytes)) {
        this.snapshot(replica, ops);
        logged = records.filter((r) => r.local !== undefined);
        this.snapshotDue = false;
      }
      if (logged.length > 0) this.logRecord(logged, ops);
      this.pending = [];
      this.pendingBytes = 0;
    }
    if (this.metaDirty) {
      const data = appendChecksum(new TextEncoder().encode(JSON.stringify(this.meta)));
      ops.push({ type: 'put', key: ['ev', this.ns, 'm'], data });
      this.metaDirty = false;
    }
    return ops;
  }

  /** The batch of the last collect is durable: returns its local writes, in order, to apply. */
  committed(): LocalWrite[] {
    const records = this.inflight?.records ?? [];
    this.inflight = undefined;
    const out: LocalWrite[] = [];
    for (const r of records) if (r.local) out.push(r.local);
    return out;
  }

  /**
   * The batch of the last collect failed: its bookkeeping is undone, its
   * remote records are queued again (or, past MAX_REQUEUED_BYTES, left to a
   * snapshot), and every local write not yet applied fails with `err`, queued
   * ones included: they may build on the failed ones (a counter's share counts
   * every earlier increment). Returns them.
   */
  failed(err: unknown): LocalWrite[] {
    const failed: LocalWrite[] = [];
    const inflight = this.inflight;
    this.inflight = undefined;
    const remote: PendingRecord[] = [];
    if (inflight) {
      const b = inflight.before;
      this.logKeys = b.logKeys;
      this.logKeys.length = b.logCount;
      this.logBytes = b.logBytes;
      this.nextLogSeq = b.nextLogSeq;
      this.snapKeys = b.snapKeys;
      this.snapBytes = b.snapBytes;
      this.drop = [...b.drop, ...this.drop];
      this.metaDirty ||= b.metaDirty;
      this.snapshotDue ||= b.snapshotDue;
      for (const r of inflight.records) {
        if (r.local) failed.push(r.local);
        else remote.push(r);
      }
    }
    for (const r of this.pending) {
      if (r.local) failed.push(r.local);
      else remote.push(r);
    }
    let bytes = 0;
    for (const r of remote) bytes += r.bytes.length;
    if (bytes > MAX_REQUEUED_BYTES) {
      this.pending = [];
      this.pendingBytes = 0;
      this.snapshotDue = true;
    } else {
      this.pending = remote;
      this.pendingBytes = bytes;
    }
    for (const w of failed) this.failLocal(w, err);
    return failed;
  }

  private failLocal(w: LocalWrite, err: unknown): void {
    if (w.outcome !== 'pending') return;
    w.outcome = 'failed';
    w.error = err;
  }

  /**
   * One log record for a batch. Each run of local writes in it over distinct
   * keys is stored as one delta (joinDeltas; a write to a key the run holds
   * already starts the next run): a group commit of many single-key writes
   * takes about a fifth of the bytes of its writes one by one, and restore
   * decodes and applies it as one delta, with the same result. A lone local
   * write and remote deltas keep the bytes they came with.
   */
  private logRecord(records: readonly PendingRecord[], ops: StorageOp[]): void {
    const parts: Uint8Array[] = [];
    let run: LocalWrite[] = [];
    const keys = new Set<string>();
    const endRun = () => {
      if (run.length === 1) parts.push((run[0] as LocalWrite).bytes);
      else if (run.length > 1) {
        const deltas = run.map((l) => l.delta);
        parts.push(encodeDelta(joinDeltas(this.ns, deltas)));
      }
      run = [];
      keys.clear();
    };
    for (const r of records) {
      if (!r.local) {
        endRun();
        parts.push(r.bytes);
        continue;
      }
      const states = r.local.delta.states;
      if (states.some((s) => keys.has(s.key))) endRun();
      run.push(r.local);
      for (const s of states) keys.add(s.key);
    }
    endRun();
    let size = 8;
    for (const b of parts) size += b.length + 4;
    const w = new ByteWriter(size);
    w.uint(parts.length);
    for (const b of parts) w.bytes(b);
    const data = appendChecksum(w.finish());
    const key = ['ev', this.ns, 'l', pad(this.nextLogSeq++, 12)];
    ops.push({ type: 'put', key, data });
    this.logKeys.push(key);
    this.logBytes += data.length;
  }

  private snapshot(replica: NamespaceReplica, ops: StorageOp[]): void {
    const state = replica.state();
    const keys: string[][] = [];
    let bytes = 0;
    const put = (states: readonly KeyState[], withContext: boolean) => {
      const data = appendChecksum(
        encodeState({
          namespace: this.ns,
          states,
          context: withContext ? state.context : new Map(),
        }),
      );
      const key = ['ev', this.ns, 's', pad(keys.length, 6)];
      ops.push({ type: 'put', key, data });
      keys.push(key);
      bytes += data.length;
    };
    // Chunks follow the order of the writes (origin, then seq), not of the keys: restore then
    // adds each origin's dots in ascending runs, which keeps the dot context a few ranges
    // instead of one per gap (several times faster to decode and merge).
    const all = [...state.states].sort(byDot);
    let i = 0;
    for (; i + SNAPSHOT_CHUNK_STATES < all.length; i += SNAPSHOT_CHUNK_STATES) {
      put(all.slice(i, i + SNAPSHOT_CHUNK_STATES), false);
    }
    put(all.slice(i), true);
    for (const key of this.snapKeys.slice(keys.length)) ops.push({ type: 'del', key });
    for (const key of this.logKeys) ops.push({ type: 'del', key });
    this.snapKeys = keys;
    this.snapBytes = bytes;
    this.logKeys = [];
    this.logBytes = 0;
  }
}
