/**
 * One eventual namespace in a browser: a @parley/crdt replica of its own (its
 * own replica id and dots: writes are accepted offline), kept in the browser's
 * database (store.ts) and synced with one node (sync.ts).
 *
 * Rules, as on a node (@parley/node's eventual module):
 * - Durable before applied: a write is planned without changing the replica
 *   (`prepare*`), written, and applied (readable, reported, sent) only once the
 *   write is durable; a failed write applies nothing.
 * - Every change is reported once to watchers, with its origin.
 * - Expiry and TTL are the replica's: an entry reads as absent from its
 *   `expiresAt` on, on every replica alike.
 * - Incarnations: a replica that completed no exchange with a node for longer
 *   than the tombstone grace period discards its state and continues under a
 *   new replica id, so it cannot bring back what the cluster has collected.
 */
import { DEFAULT_LIMITS, listPage, planList } from '@parley/coord';
import {
  type Delta,
  type Digest,
  type Entry,
  encodeDelta,
  encodeState,
  expiresAtOf,
  type JsonValue,
  type KeyState,
  NamespaceReplica,
} from '@parley/crdt';
import { ClosedError, InvalidArgumentError, UnavailableError } from '@parley/interface';
import type * as Y from 'yjs';
import { freezeEntry } from './entry.js';
import { Feed } from './feed.js';
import type { ReplicaDb, ResolvedBrowserOptions } from './options.js';
import { acquireSlot, spaceOf } from './slots.js';
import {
  bytesJson,
  decodeRecord,
  jsonBytes,
  logKey,
  logPrefix,
  metaKey,
  type Op,
  readPrefix,
  type WriteQueue,
} from './store.js';
import { SyncClient } from './sync.js';
import type {
  EventualChange,
  EventualEntry,
  EventualSetResult,
  EventualWriteOptions,
  ListPage,
  ListQuery,
  SyncState,
  Unsubscribe,
  WatchOptions,
} from './types.js';

/** Period of garbage collection (the node's default). */
const GC_INTERVAL_MS = 60_000;

/** Log records after which opening folds the log into one full state. */
export const COMPACT_RECORDS = 256;

interface Meta {
  replicaId: string;
  lastContactMs: number | null;
}

/** What a namespace needs of its browser node. */
export interface NamespaceHost {
  readonly options: ResolvedBrowserOptions;
  db(): Promise<ReplicaDb>;
  queue(): Promise<WriteQueue>;
  newReplicaId(): string;
  /** Loads rich-value (Yjs) support on first use. */
  yjs(ns: BrowserNamespace, key: string): Promise<Y.Doc>;
}

const encoder = new TextEncoder();
const valueBytes = (e: Entry): number => encoder.encode(JSON.stringify(e.value)).length;

/** The latest wall time a delta's states carry. */
function maxWallOf(delta: Delta): number {
  let max = 0;
  for (const s of delta.states) {
    max = Math.max(max, s.wallMs);
    if (s.type === 'counter') for (const share of s.shares.values()) max = Math.max(max, share.wallMs);
  }
  return max;
}

function isLive(state: KeyState | undefined, now: number): boolean {
  return state !== undefined && state.type !== 'tombstone' && now < expiresAtOf(state);
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('key must be a non-empty string');
}

export class BrowserNamespace {
  readonly ready: Promise<void>;
  private current!: NamespaceReplica;
  private meta: Meta = { replicaId: '', lastContactMs: null };
  private logSeq = 0;
  private readonly feed: Feed;
  private readonly sync: SyncClient;
  private closed = false;
  private opened = false;
  private gcTimer: ReturnType<typeof setInterval> | undefined;
  /** Where this tab's replica is kept (see slots.ts). */
  private space: string;
  private releaseSlot: () => void = () => {};

  constructor(
    readonly name: string,
    private readonly host: NamespaceHost,
  ) {
    const o = host.options;
    this.space = name;
    this.feed = new Feed(name, () => this.current, o.now);
    this.sync = new SyncClient(
      {
        name,
        maxTtlSeconds: o.eventual.maxTtlSeconds,
        replicaId: () => this.current.replicaId,
        digest: () => this.current.digest(),
        deltaFor: (d: Digest) => this.current.deltaFor(d),
        mergeRemote: (delta, bytes, origin) => this.mergeRemote(delta, bytes, origin),
        noteContact: () => this.noteContact(),
      },
      o,
    );
    this.ready = this.open();
    this.ready.then(
      () => {
        this.opened = true;
      },
      () => {},
    );
  }

  private newReplica(replicaId: string): NamespaceReplica {
    return new NamespaceReplica({ namespace: this.name, replicaId, ...this.host.options.eventual });
  }

  private async open(): Promise<void> {
    const db = await this.host.db();
    const released = new Promise<void>((r) => {
      this.releaseSlot = r;
    });
    this.space = spaceOf(this.name, await acquireSlot(this.host.options.name, this.name, released));
    const stored = await db.get(metaKey(this.space));
    const now = this.host.options.now();
    const records = await readPrefix(db, logPrefix(this.space));
    const grace = this.host.options.eventual.tombstoneGraceMs;
    let meta = stored === undefined ? undefined : (bytesJson(stored) as Meta);
    const ops: Op[] = [];
    if (meta !== undefined && meta.lastContactMs !== null && now - meta.lastContactMs > grace) {
      // Out of contact longer than the grace period: start over under a new replica id.
      for (const [k] of records) ops.push({ type: 'del', key: k });
      records.length = 0;
      meta = undefined;
    }
    if (meta === undefined) {
      meta = { replicaId: this.host.newReplicaId(), lastContactMs: null };
      ops.push({ type: 'put', key: metaKey(this.space), value: jsonBytes(meta) });
    }
    this.meta = meta;
    this.current = this.newReplica(meta.replicaId);
    for (const [k, v] of records) {
      const delta = decodeRecord(v);
      // Its own records: merged at their own time at least, so a clock that stepped back refuses none.
      this.current.merge(delta, Math.max(now, maxWallOf(delta)));
      this.logSeq = Math.max(this.logSeq, Number(k.slice(logPrefix(this.space).length)));
    }
    if (records.length > COMPACT_RECORDS) {
      const seq = ++this.logSeq;
      ops.push({ type: 'put', key: logKey(this.space, seq), value: encodeState(this.current.state()) });
      for (const [k] of records) ops.push({ type: 'del', key: k });
    }
    if (ops.length > 0) await (await this.host.queue()).write(ops);
    if (this.closed) return;
    this.feed.track();
    this.sync.start();
    // Tombstones and expired entries are collected as on a node (after the grace period).
    this.gcTimer = setInterval(() => this.current.gc(this.host.options.now()), GC_INTERVAL_MS);
  }

  private async ensureOpen(): Promise<void> {
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
    if (!this.opened) await this.ready;
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
  }

  /** This replica's id (fresh per browser profile and namespace, and per incarnation). */
  get replicaId(): string {
    return this.meta.replicaId;
  }

  /** The replica (read it: every change goes through the namespace). */
  get replica(): NamespaceReplica {
    return this.current;
  }

  // ---------------------------------------------------------------- writes

  private async write(prepare: (r: NamespaceReplica, now: number) => Delta | undefined): Promise<Delta | undefined> {
    await this.ensureOpen();
    const r = this.current;
    const delta = prepare(r, this.host.options.now());
    if (delta === undefined) return undefined;
    const bytes = encodeDelta(delta);
    const seq = ++this.logSeq;
    await (await this.host.queue()).write([{ type: 'put', key: logKey(this.space, seq), value: bytes }]);
    if (r !== this.current)
      throw new UnavailableError(`namespace '${this.name}' restarted under a new replica id; retry`);
    const key = (delta.states[0] as KeyState).key;
    const now = this.host.options.now();
    const wasLive = this.feed.active && r.get(key, now) !== undefined;
    r.applyPrepared(delta, now);
    this.feed.report(key, wasLive, 'local');
    this.sync.sendLocal(bytes);
    return delta;
  }

  /** Drops writes prepared and not yet durable (their batch failed). */
  discardPrepared(): void {
    this.current?.discardPrepared();
  }

  private ttlOf(options: EventualWriteOptions | undefined): { ttlSeconds?: number } {
    return options?.ttl === undefined ? {} : { ttlSeconds: options.ttl };
  }

  private entryOfWrite(delta: Delta | undefined): EventualEntry {
    const state = delta?.states[0] as Exclude<KeyState, { type: 'tombstone' }>;
    const e = this.current.get(state.key, this.host.options.now());
    if (e === undefined) throw new UnavailableError(`write of '${state.key}' was superseded before it returned`);
    return freezeEntry(this.name, state.key, e);
  }

  async set(key: string, value: JsonValue, options?: EventualWriteOptions): Promise<EventualSetResult> {
    let operation: 'created' | 'updated' = 'created';
    const delta = await this.write((r, now) => {
      if (isLive(r.preparedCurrent(key), now)) operation = 'updated';
      return r.prepareSet(key, value, now, this.ttlOf(options));
    });
    return { ...this.entryOfWrite(delta), operation };
  }

  async increment(key: string, by = 1, options?: EventualWriteOptions): Promise<EventualEntry> {
    const delta = await this.write((r, now) => r.prepareIncrement(key, by, now, this.ttlOf(options)));
    return this.entryOfWrite(delta);
  }

  /** Resolves true if a live entry was deleted (nothing is written for a key that is not live here). */
  async delete(key: string): Promise<boolean> {
    checkKey(key);
    const delta = await this.write((r, now) =>
      isLive(r.preparedCurrent(key), now) ? r.prepareDelete(key, now) : undefined,
    );
    return delta !== undefined;
  }

  // ---------------------------------------------------------------- reads

  async get(key: string): Promise<EventualEntry | undefined> {
    checkKey(key);
    await this.ensureOpen();
    const e = this.current.get(key, this.host.options.now());
    return e ? freezeEntry(this.name, key, e) : undefined;
  }

  /** One page of live entries (the node's list grammar: q, prefix, filter, sort, limit, cursor). */
  async list(query: ListQuery = {}): Promise<ListPage<EventualEntry>> {
    if (query === null || typeof query !== 'object') throw new InvalidArgumentError('list query must be an object');
    await this.ensureOpen();
    const entries = this.current.entries(this.host.options.now());
    return listPage(planList(DEFAULT_LIMITS, query), entries, valueBytes, (key, e) => freezeEntry(this.name, key, e));
  }

  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
    if (typeof callback !== 'function') throw new InvalidArgumentError('watch needs a callback');
    return this.feed.watch(options ?? {}, callback);
  }

  /** A Y.Doc kept in the browser's database and synced through the node's y-websocket door. */
  async yjs(key: string): Promise<Y.Doc> {
    checkKey(key);
    await this.ensureOpen();
    return this.host.yjs(this, key);
  }

  // ---------------------------------------------------------------- sync

  /** Where the sync with the node stands. */
  get syncState(): SyncState {
    return this.sync.state;
  }

  /** The node's last refusal, if any. */
  get syncError(): { code: string; message: string } | undefined {
    return this.sync.lastError;
  }

  onSyncState(listener: (state: SyncState) => void): Unsubscribe {
    return this.sync.onState(listener);
  }

  /** Resolves once the sync state is `synced` (rejects on `refused`). */
  synced(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = (s: SyncState) => {
        if (s === 'synced') {
          off();
          resolve();
        } else if (s === 'refused') {
          off();
          reject(
            new UnavailableError(`the node refused namespace '${this.name}': ${this.sync.lastError?.message ?? ''}`),
          );
        }
      };
      const off = this.sync.onState(check);
      check(this.sync.state);
    });
  }

  private mergeRemote(delta: Delta, bytes: Uint8Array, origin: string): void {
    if (this.closed) return;
    if (delta.namespace !== this.name) throw new InvalidArgumentError(`delta of namespace '${delta.namespace}'`);
    const now = this.host.options.now();
    let before: Map<string, boolean> | undefined;
    if (this.feed.active) {
      before = new Map();
      for (const s of delta.states) before.set(s.key, this.current.get(s.key, now) !== undefined);
    }
    const result = this.current.merge(delta, now);
    if (result.changedKeys.length === 0 && result.rejectedStates === 0 && delta.context.size === 0) return;
    const record = result.rejectedStates > 0 ? encodeState(this.current.state()) : bytes;
    const seq = ++this.logSeq;
    void this.host.queue().then((q) =>
      q.write([{ type: 'put', key: logKey(this.space, seq), value: record }]).catch((err: unknown) => {
        console.warn(`parley: could not keep a delta of '${this.name}'; the next sync brings it again`, err);
      }),
    );
    if (before) for (const key of result.changedKeys) this.feed.report(key, before.get(key) === true, origin);
  }

  private noteContact(): void {
    const now = this.host.options.now();
    const last = this.meta.lastContactMs;
    const every = Math.min(60_000, Math.max(1, Math.floor(this.host.options.eventual.tombstoneGraceMs / 10)));
    if (last !== null && now - last < every) return;
    this.meta = { ...this.meta, lastContactMs: now };
    const value = jsonBytes(this.meta);
    void this.host.queue().then((q) => q.write([{ type: 'put', key: metaKey(this.space), value }]).catch(() => {}));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.sync.stop();
    this.feed.close();
    if (this.gcTimer !== undefined) clearInterval(this.gcTimer);
    await this.ready.catch(() => {});
    await this.host
      .queue()
      .then((q) => q.idle())
      .catch(() => {});
    this.releaseSlot();
  }
}
