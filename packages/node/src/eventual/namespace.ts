/**
 * One eventual namespace on this node: the NamespaceReplica of @parley/crdt,
 * persisted through the node's group commit, spread by the Replicator
 * (gossip + anti-entropy), with watches and TTL expiry reports.
 *
 * Rules:
 * - Durable before applied: a local write is planned without changing the
 *   replica (`prepare*`), written by the group commit, and applied only once
 *   its batch is on disk; only then is it readable, reported to watchers,
 *   gossiped and acknowledged. A failed batch applies nothing (its writes,
 *   and those prepared after them, fail with its error).
 * - Every local and remote change is reported once to watchers, with its
 *   origin; an entry reaching its expiry is reported as `expire`.
 * - Incarnations: a replica that completed no anti-entropy round for longer
 *   than the tombstone grace period discards its state and continues under
 *   a new replica id (`<peerId>~<n>`), so it cannot bring back what its peers
 *   have collected (see @parley/crdt INTERNALS).
 */

import type * as Automerge from '@automerge/automerge';
import {
  type Delta,
  type Entry,
  encodeDelta,
  entryOf,
  expiresAtOf,
  type JsonValue,
  type KeyState,
  NamespaceReplica,
} from '@parley/crdt';
import {
  ClosedError,
  InvalidArgumentError,
  isParleyError,
  type PeerId,
  UnavailableError,
  type Unsubscribe,
} from '@parley/interface';
import type * as Y from 'yjs';
import type {
  AutomergeHandle,
  Consistency,
  EphemeralChannel,
  EventualChange,
  EventualEntry,
  EventualNamespace,
  EventualReadOptions,
  EventualSetResult,
  EventualWriteOptions,
  ListPage,
  ListQuery,
  NamespaceStatus,
  WatchOptions,
} from '../api.js';
import type { NodeContext } from '../context.js';
import type { CommitSource, GroupCommit } from '../group-commit.js';
import { openEphemeralChannel } from './ephemeral.js';
import { ExpiryQueue } from './expiry.js';
import { listEntries } from './list.js';
import type { ResolvedEventualOptions } from './options.js';
import { loadNamespace, maxWallOf, NamespaceStore } from './persist.js';
import { Replicator } from './replication.js';
import { ChangeFeed } from './watch.js';

const NAMESPACE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const MAX_NAMESPACE_LENGTH = 128;

export function checkNamespaceName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAMESPACE_LENGTH || !NAMESPACE_RE.test(name)) {
    throw new InvalidArgumentError(
      `namespace must be 1..${MAX_NAMESPACE_LENGTH} letters, digits, ".", "_" or "-", starting alphanumeric`,
      { namespace: typeof name === 'string' ? name.slice(0, 64) : null },
    );
  }
  return name;
}

function copyValue(v: JsonValue): JsonValue {
  return v !== null && typeof v === 'object' ? (structuredClone(v) as JsonValue) : v;
}

export function toEventualEntry(namespace: string, key: string, e: Entry): EventualEntry {
  return {
    namespace,
    key,
    value: copyValue(e.value),
    version: e.version,
    ttlSeconds: e.ttlSeconds,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    expiresAt: e.expiresAt,
  };
}

function checkConsistency(c: Consistency | undefined): Consistency {
  const v = c ?? 'local';
  if (v !== 'local' && v !== 'majority') throw new InvalidArgumentError("consistency must be 'local' or 'majority'");
  return v;
}

/** Whether a key state reads as a live entry at `now`. */
function isLive(state: KeyState | undefined, now: number): boolean {
  return state !== undefined && state.type !== 'tombstone' && now < expiresAtOf(state);
}

function checkReplicas(n: number | undefined): number | undefined {
  if (n !== undefined && (!Number.isSafeInteger(n) || n < 1 || n > 1024)) {
    throw new InvalidArgumentError('replicas must be an integer in 1..1024');
  }
  return n;
}

function checkTimeout(t: number | undefined): number | undefined {
  if (t !== undefined && (!Number.isSafeInteger(t) || t < 1 || t > 600_000)) {
    throw new InvalidArgumentError('timeoutMs must be an integer in 1..600000');
  }
  return t;
}

/** Counters of one namespace (exported by status and the HTTP metrics). */
export interface NamespaceCounters {
  deltasApplied: number;
  decodeRejections: number;
  driftRejections: number;
  overLimitRejections: number;
  antiEntropyRounds: number;
  repairedEntries: number;
  gossipBytesIn: number;
  gossipBytesOut: number;
  incarnations: number;
  /** Records found torn on restore (writes that were never acknowledged). */
  tornRecords: number;
  /** Gossip messages ignored because their sender kept sending bad input. */
  mutedGossip: number;
}

export class EventualNamespaceImpl implements EventualNamespace, CommitSource {
  readonly name: string;
  readonly ready: Promise<void>;
  replica: NamespaceReplica;
  readonly store: NamespaceStore;
  readonly feed: ChangeFeed;
  readonly replication: Replicator;
  readonly counters: NamespaceCounters = {
    deltasApplied: 0,
    decodeRejections: 0,
    driftRejections: 0,
    overLimitRejections: 0,
    antiEntropyRounds: 0,
    repairedEntries: 0,
    gossipBytesIn: 0,
    gossipBytesOut: 0,
    incarnations: 0,
    tornRecords: 0,
    mutedGossip: 0,
  };
  lastAntiEntropyAt: number | null = null;
  private readonly expiry = new ExpiryQueue();
  private expiryTimer: (() => void) | undefined;
  private expiryTimerAt = Number.POSITIVE_INFINITY;
  private gcTimer: (() => void) | undefined;
  /** Pending write of merged remote deltas (see commitRemote). */
  private remoteCommitTimer: (() => void) | undefined;
  private closed = false;
  private failure: Error | undefined;
  /** Lazily loaded rich-value support (yjs, automerge). */
  rich: import('./rich.js').RichValues | undefined;

  constructor(
    name: string,
    readonly ctx: NodeContext,
    readonly options: ResolvedEventualOptions,
    private readonly commitQueue: GroupCommit,
  ) {
    this.name = name;
    this.replica = this.newReplica(0);
    this.store = new NamespaceStore(name, options.compactLogBytes);
    this.feed = new ChangeFeed(ctx.logger, options.maxQueuedChanges);
    this.replication = new Replicator(this);
    this.ready = this.open();
    this.ready.catch((err: unknown) => {
      this.failure = err as Error;
      ctx.logger.error({ err: String(err), namespace: name }, 'eventual: namespace failed to open');
    });
  }

  private newReplica(incarnation: number): NamespaceReplica {
    const o = this.options;
    return new NamespaceReplica({
      namespace: this.name,
      replicaId: incarnation === 0 ? this.ctx.peerId : `${this.ctx.peerId}~${incarnation}`,
      maxValueBytes: o.maxValueBytes,
      maxLiveKeys: o.maxLiveKeys,
      maxClockDriftMs: o.maxClockDriftMs,
      defaultTtlSeconds: o.defaultTtlSeconds,
      maxTtlSeconds: o.maxTtlSeconds,
      tombstoneGraceMs: o.tombstoneGraceMs,
    });
  }

  get replicaId(): string {
    return this.replica.replicaId;
  }

  now(): number {
    return this.ctx.clock.nowMs();
  }

  private async open(): Promise<void> {
    const loaded = await this.retryRead(() => loadNamespace(this.ctx.storage.kv, this.name));
    this.store.adopt(loaded);
    this.replication.loadReplicas();
    this.counters.tornRecords += loaded.tornKeys.length;
    const now = this.now();
    const meta = loaded.meta;
    if (this.outOfContact(now, meta.lastContactMs)) {
      this.ctx.logger.warn(
        { namespace: this.name, lastContactMs: meta.lastContactMs, incarnation: meta.incarnation + 1 },
        'eventual: out of contact longer than the tombstone grace period; discarding state under a new replica id',
      );
      this.store.discardAll(new UnavailableError(`namespace '${this.name}' restarted under a new replica id`));
      this.store.setMeta({ ...meta, incarnation: meta.incarnation + 1, lastContactMs: null });
      this.replica = this.newReplica(meta.incarnation + 1);
      this.counters.incarnations++;
      await this.commitQueue.commit(this);
    } else {
      this.replica = this.newReplica(meta.incarnation);
      const at = Math.max(now, loaded.maxWallMs);
      for (const d of loaded.deltas) this.replica.merge(d, at);
    }
    if (this.closed) return;
    this.replication.start();
    this.scheduleGc();
  }

  /** Retries a read that failed with a transient storage error (`unavailable`), at most 20 times, 5..100 ms apart. */
  async retryRead<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (!isParleyError(err, 'unavailable') || attempt >= 20 || this.closed) throw err;
        this.ctx.logger.warn({ err: String(err), namespace: this.name, attempt }, 'eventual: retrying a failed read');
        await new Promise<void>((r) => this.ctx.scheduler.after(Math.min(100, 5 << attempt), r));
      }
    }
  }

  /** True when the incarnation rule requires a new replica id. */
  outOfContact(now: number, lastContactMs: number | null = this.store.meta.lastContactMs): boolean {
    return this.options.incarnations && lastContactMs !== null && now - lastContactMs > this.options.tombstoneGraceMs;
  }

  /**
   * Applies the incarnation rule before anything of this replica's state is
   * used with a peer or extended by a write: checked at every local write,
   * every anti-entropy round, every request served and every gossip received.
   */
  checkIncarnation(): void {
    if (this.outOfContact(this.now())) this.reincarnate();
  }

  /** Discards the local state and continues under a new replica id (the incarnation rule). */
  reincarnate(): void {
    const incarnation = this.store.meta.incarnation + 1;
    this.ctx.logger.warn(
      { namespace: this.name, incarnation },
      'eventual: out of contact longer than the tombstone grace period; discarding state under a new replica id',
    );
    const now = this.now();
    const before = this.feed.active ? this.replica.entries(now) : [];
    this.store.discardAll(new UnavailableError(`namespace '${this.name}' restarted under a new replica id; retry`));
    this.store.setMeta({ ...this.store.meta, incarnation, lastContactMs: null });
    this.replica = this.newReplica(incarnation);
    this.counters.incarnations++;
    this.replication.dropOutbox();
    for (const [key] of before) this.feed.emit({ namespace: this.name, key, type: 'expire', origin: 'local' });
    this.commitQueue.commit(this).catch(() => {});
  }

  /** Records a completed anti-entropy round (persisted at most every grace/10, at least once a minute). */
  noteContact(now: number): void {
    const last = this.store.meta.lastContactMs;
    const every = Math.min(60_000, Math.max(1, Math.floor(this.options.tombstoneGraceMs / 10)));
    this.lastAntiEntropyAt = now;
    if (last === null || now - last >= every) {
      this.store.setMeta({ ...this.store.meta, lastContactMs: now });
      this.commitQueue.commit(this).catch(() => {});
    }
  }

  private async ensureOpen(): Promise<void> {
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
    await this.ready;
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
  }

  // ---------------------------------------------------------------- CommitSource

  collect() {
    return this.store.collect(this.replica);
  }

  /** The batch is durable: its local writes are applied now, in order, and reported to watchers. */
  committed(): void {
    const writes = this.store.committed();
    if (writes.length === 0) return;
    const now = this.now();
    for (const w of writes) {
      if (w.outcome !== 'pending') continue;
      if (w.replica !== this.replica) {
        // Prepared by an incarnation that was discarded meanwhile: the new one never had it.
        w.outcome = 'failed';
        w.error = new UnavailableError(`namespace '${this.name}' restarted under a new replica id; retry`);
        continue;
      }
      const key = (w.delta.states[0] as KeyState).key;
      const wasLive = this.feed.active && this.replica.get(key, now) !== undefined;
      this.replica.applyPrepared(w.delta, now);
      w.outcome = 'applied';
      this.reportChange(key, wasLive, now, 'local');
    }
  }

  /** The batch failed: none of its local writes, nor any prepared since, is applied (each fails). */
  commitFailed(err: unknown): void {
    const writes = this.store.failed(err);
    if (writes.length === 0) return;
    for (const r of new Set(writes.map((w) => w.replica))) r.discardPrepared();
  }

  /** Resolves once everything `source` has pending is durable (rich values commit through this). */
  commitTo(source: CommitSource): Promise<void> {
    return this.commitQueue.commit(source);
  }

  /** Resolves once everything applied so far is durable. */
  durable(): Promise<void> {
    return this.commitQueue.commit(this);
  }

  // ---------------------------------------------------------------- writes

  /**
   * One local write, durable before it is applied: `prepare` plans it on the
   * replica without changing what readers and peers see, the group commit
   * writes it, and only then is it applied (`committed`), gossiped and, for
   * 'majority', pushed. If the batch fails, nothing of it is applied and the
   * caller gets the batch's error: on any error nothing is written.
   */
  private async write(
    options: EventualWriteOptions | undefined,
    prepare: (r: NamespaceReplica, now: number) => Delta | undefined,
  ): Promise<Delta | undefined> {
    const consistency = checkConsistency(options?.consistency);
    const timeoutMs = checkTimeout(options?.timeoutMs);
    const replicas = checkReplicas(options?.replicas);
    await this.ensureOpen();
    this.checkIncarnation();
    const fault = this.commitQueue.fault;
    if (fault) throw fault;
    const replica = this.replica;
    const delta = prepare(replica, this.now());
    if (delta === undefined) return undefined;
    const bytes = encodeDelta(delta);
    const w = this.store.appendLocal(delta, bytes, replica);
    try {
      await this.commitQueue.commit(this);
    } catch (err) {
      throw w.error ?? err;
    }
    if (w.outcome !== 'applied') throw w.error ?? new UnavailableError(`write to '${this.name}' was not applied`);
    this.replication.gossip(bytes);
    if (consistency === 'majority') await this.replication.pushToMajority(bytes, replicas, timeoutMs);
    return delta;
  }

  private ttlOf(options: EventualWriteOptions | undefined): { ttlSeconds?: number } {
    return options?.ttl === undefined ? {} : { ttlSeconds: options.ttl };
  }

  /** The entry a local write's delta holds (what the write made of the key). */
  private entryOfWrite(delta: Delta | undefined): EventualEntry {
    const state = delta?.states[0] as Exclude<KeyState, { type: 'tombstone' }>;
    return toEventualEntry(this.name, state.key, entryOf(state));
  }

  async set(key: string, value: JsonValue, options?: EventualWriteOptions): Promise<EventualSetResult> {
    let operation: 'created' | 'updated' = 'created';
    const delta = await this.write(options, (r, now) => {
      const current = r.preparedCurrent(key);
      if (isLive(current, now)) operation = 'updated';
      return r.prepareSet(key, value, now, this.ttlOf(options));
    });
    return { ...this.entryOfWrite(delta), operation };
  }

  async increment(key: string, by = 1, options?: EventualWriteOptions): Promise<EventualEntry> {
    const delta = await this.write(options, (r, now) => r.prepareIncrement(key, by, now, this.ttlOf(options)));
    return this.entryOfWrite(delta);
  }

  async delete(key: string, options?: EventualWriteOptions): Promise<boolean> {
    if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('key must be a non-empty string');
    // A 'majority' delete first learns what a majority holds, so it deletes what they have seen.
    if (options?.consistency === 'majority') {
      const replicas = checkReplicas(options.replicas);
      const timeoutMs = checkTimeout(options.timeoutMs);
      await this.ensureOpen();
      await this.replication.pullFromMajority(replicas, timeoutMs);
    }
    const delta = await this.write(options, (r, now) => {
      // Not live here: nothing to delete, and nothing is written (see docs/guarantees.md).
      if (!isLive(r.preparedCurrent(key), now)) return undefined;
      return r.prepareDelete(key, now);
    });
    return delta !== undefined;
  }

  // ---------------------------------------------------------------- reads

  async get(key: string, options?: EventualReadOptions): Promise<EventualEntry | undefined> {
    const consistency = checkConsistency(options?.consistency);
    const timeoutMs = checkTimeout(options?.timeoutMs);
    const replicas = checkReplicas(options?.replicas);
    if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('key must be a non-empty string');
    await this.ensureOpen();
    if (consistency === 'majority') await this.replication.pullFromMajority(replicas, timeoutMs);
    const now = this.now();
    const e = this.replica.get(key, now);
    return e ? toEventualEntry(this.name, key, e) : undefined;
  }

  async list(query: ListQuery = {}): Promise<ListPage<EventualEntry>> {
    await this.ensureOpen();
    const now = this.now();
    return listEntries(this.replica.entries(now), query, (key, e) => toEventualEntry(this.name, key, e));
  }

  // ---------------------------------------------------------------- watch

  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
    if (typeof callback !== 'function') throw new InvalidArgumentError('watch needs a callback');
    this.startExpiryTracking();
    return this.feed.watch(options ?? {}, callback);
  }

  changes(options: WatchOptions = {}): AsyncIterable<EventualChange> {
    return this.feed.changes(options, () => this.startExpiryTracking());
  }

  /** Called for a key whose state may have changed; `wasLive` is whether it read as present before. */
  reportChange(key: string, wasLive: boolean, now: number, origin: 'local' | PeerId): void {
    if (!this.feed.active) return;
    const e = this.replica.get(key, now);
    if (e) {
      this.expiry.push(e.expiresAt, key);
      this.armExpiry();
      this.feed.emit({ namespace: this.name, key, type: 'set', entry: toEventualEntry(this.name, key, e), origin });
    } else if (wasLive) {
      const state = this.replica.stateOf(key);
      const type = state?.type === 'tombstone' ? 'delete' : 'expire';
      this.feed.emit({ namespace: this.name, key, type, origin });
    }
  }

  /** Merges a delta from a peer; persists and reports what changed. Returns the changed key count. */
  mergeRemote(delta: Delta, bytes: Uint8Array | undefined, origin: PeerId): number {
    const now = this.now();
    let before: Map<string, boolean> | undefined;
    if (this.feed.active) {
      before = new Map();
      for (const s of delta.states) before.set(s.key, this.replica.get(s.key, now) !== undefined);
    }
    const result = this.replica.merge(delta, now);
    if (result.rejectedStates > 0) {
      this.counters.driftRejections += result.rejectedStates;
      this.ctx.events.emit('reject:drift', { namespace: this.name, count: result.rejectedStates, peer: origin });
      this.ctx.logger.warn(
        { namespace: this.name, peer: origin, states: result.rejectedStates },
        'eventual: refused states stamped too far ahead (clock drift)',
      );
    }
    if (result.changedKeys.length === 0) return 0;
    // Persist what was accepted: without the refused states (and then without the context).
    let record = bytes;
    if (result.rejectedStates > 0 || record === undefined) {
      const bound = now + this.options.maxClockDriftMs;
      const states = result.rejectedStates > 0 ? delta.states.filter((s) => maxWallOf(s) <= bound) : delta.states;
      record = encodeDelta({
        namespace: delta.namespace,
        states,
        context: result.rejectedStates > 0 ? new Map() : delta.context,
      });
    }
    // With the disk faulted nothing more is written: the merged state lives in memory, and peers
    // (which hold it durably) bring it back after the restart.
    if (this.commitQueue.fault === undefined) {
      this.store.append(record);
      this.commitRemote();
    }
    this.counters.deltasApplied++;
    this.ctx.events.emit('delta:applied', { namespace: this.name, keys: result.changedKeys.length, origin });
    if (before) for (const key of result.changedKeys) this.reportChange(key, before.get(key) === true, now, origin);
    return result.changedKeys.length;
  }

  /**
   * Writes merged remote deltas within `remoteCommitDelayMs`, so that those arriving
   * together share one fsync: with N nodes each receiving every write, a write per
   * delta costs the host N fsyncs per write, and the writer's own fsync (which its
   * acknowledgement and its gossip wait for) queues behind them. Nothing waits on
   * these: a crash in the window loses only copies that peers still hold durably
   * (the origin wrote them before sending), and anti-entropy brings them back. A
   * local write's batch takes them along.
   */
  private commitRemote(): void {
    if (this.options.remoteCommitDelayMs === 0) {
      this.commitQueue.commit(this).catch(() => {});
      return;
    }
    this.remoteCommitTimer ??= this.ctx.scheduler.after(this.options.remoteCommitDelayMs, () => {
      this.remoteCommitTimer = undefined;
      if (this.store.hasPending) this.commitQueue.commit(this).catch(() => {});
    });
  }

  private startExpiryTracking(): void {
    if (this.feed.active) return;
    // Rebuild the expiry queue from scratch: it is kept only while someone watches.
    this.expiry.rebuild(() => false);
    this.ready.then(
      () => {
        const now = this.now();
        for (const [key, e] of this.replica.entries(now)) this.expiry.push(e.expiresAt, key);
        this.armExpiry();
      },
      () => {},
    );
  }

  private armExpiry(): void {
    const at = this.expiry.peekTime();
    if (at === undefined || this.closed || at >= this.expiryTimerAt) return;
    this.expiryTimer?.();
    this.expiryTimerAt = at;
    this.expiryTimer = this.ctx.scheduler.after(Math.max(0, at - this.now()), () => this.fireExpiry());
  }

  private fireExpiry(): void {
    this.expiryTimer = undefined;
    this.expiryTimerAt = Number.POSITIVE_INFINITY;
    if (this.closed) return;
    if (!this.feed.active) {
      this.expiry.rebuild(() => false);
      return;
    }
    const now = this.now();
    for (let t = this.expiry.peekTime(); t !== undefined && t <= now; t = this.expiry.peekTime()) {
      const [at, key] = this.expiry.pop() as [number, string];
      const state = this.replica.stateOf(key);
      if (state && state.type !== 'tombstone' && expiresAtOf(state) === at) {
        this.feed.emit({ namespace: this.name, key, type: 'expire', origin: 'local' });
      }
    }
    if (this.expiry.size > 2 * this.replica.stats().states + 1024) {
      this.expiry.rebuild((at, key) => {
        const s = this.replica.stateOf(key);
        return s !== undefined && s.type !== 'tombstone' && expiresAtOf(s) === at;
      });
    }
    this.armExpiry();
  }

  private scheduleGc(): void {
    if (this.closed) return;
    this.gcTimer = this.ctx.scheduler.after(this.options.gcIntervalMs, () => {
      this.gcTimer = undefined;
      if (this.closed) return;
      this.replica.gc(this.now());
      this.scheduleGc();
    });
  }

  // ---------------------------------------------------------------- rich values

  async yjs(key: string): Promise<Y.Doc> {
    await this.ensureOpen();
    return (await this.richValues()).yjs(key);
  }

  async automerge<T = Record<string, unknown>>(key: string): Promise<AutomergeHandle<T>> {
    await this.ensureOpen();
    return (await this.richValues()).automerge<T>(key);
  }

  ephemeral(channel: string): EphemeralChannel {
    return openEphemeralChannel(this.ctx, this.name, channel);
  }

  /** Answers a rich-value sync request from a peer. */
  async richRequest(from: PeerId, body: Uint8Array): Promise<Uint8Array> {
    return (await this.richValues()).handleRequest(from, body);
  }

  private async richValues(): Promise<import('./rich.js').RichValues> {
    if (!this.rich) {
      const { RichValues } = await import('./rich.js');
      this.rich ??= new RichValues(this);
    }
    return this.rich;
  }

  // ---------------------------------------------------------------- lifecycle

  status(): NamespaceStatus {
    const now = this.now();
    return {
      name: this.name,
      kind: 'eventual',
      keys: this.failure ? 0 : this.replica.liveCount(now),
      bytes: this.store.bytes,
      lastAntiEntropyAt: this.lastAntiEntropyAt,
    };
  }

  /** Stops timers and replication, and writes what is pending. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.expiryTimer?.();
    this.gcTimer?.();
    this.remoteCommitTimer?.();
    this.remoteCommitTimer = undefined;
    this.replication.stop();
    this.rich?.stop();
    await this.ready.catch(() => {});
    if (this.store.hasPending) await this.commitQueue.commit(this).catch(() => {});
    if (this.rich) await this.commitQueue.commit(this.rich).catch(() => {});
    this.feed.close();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

export type { Automerge, Y };
