/**
 * One eventual namespace on this node: the public API over its local replica
 * (local-replica.ts: the CRDT replica, its store, the incarnation rule, local
 * writes durable before applied, the merge of peers' deltas), its change feed
 * (change-feed.ts: watches, `changes()` and expiry reports), its replication
 * (replication.ts: gossip, anti-entropy, majority) and its rich values
 * (rich.ts, loaded on first use). Replication and rich values see the
 * namespace through narrow ports (port.ts), never the namespace itself.
 *
 * A local write is gossiped and acknowledged only once its batch is durable
 * and applied (with `gossipBeforeDurable`, gossiped while its batch is being
 * written); with `consistency: 'majority'` it also waits until a majority
 * of the known replicas hold it on disk.
 */

import type * as Automerge from '@automerge/automerge';
import {
  type Delta,
  type Deps,
  entryOf,
  expiresAtOf,
  forEachDot,
  type JsonValue,
  type KeyState,
  type NamespaceReplica,
} from '@parley/crdt';
import {
  ClosedError,
  InvalidArgumentError,
  isNamespaceName,
  isParleyError,
  MAX_NAMESPACE_LENGTH,
  microtask,
  SessionBehindError,
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
import type { GroupCommit } from '../group-commit.js';
import type { Session } from '../session/session.js';
import { ChangeFeed } from './change-feed.js';
import { readOnlyEntry, toEventualEntry } from './entry.js';
import { openEphemeralChannel } from './ephemeral.js';
import { listEntries } from './list.js';
import { LocalReplica, type NamespaceCounters } from './local-replica.js';
import type { ResolvedEventualOptions } from './options.js';
import { loadNamespace } from './persist.js';
import type { ClientReplication, ReplicationPort, RichPort } from './port.js';
import { Replicator } from './replication.js';
import type { RichValues } from './rich.js';
import { richModule } from './rich-loader.js';
import { waitForSession } from './session-wait.js';

/** The dots of `state` written by `replicaId` (a local write's own dot). */
function ownDots(state: KeyState, replicaId: string): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  forEachDot(state, (node, seq) => {
    if (node === replicaId) out.push([node, seq]);
  });
  return out;
}

export function checkNamespaceName(name: unknown): string {
  if (!isNamespaceName(name)) {
    throw new InvalidArgumentError(
      `namespace must be 1..${MAX_NAMESPACE_LENGTH} letters, digits, ".", "_" or "-", starting alphanumeric`,
      { namespace: typeof name === 'string' ? name.slice(0, 64) : null },
    );
  }
  return name;
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

/** Reads within one synchronous turn that share one clock reading (see readNow). */
const READS_PER_CLOCK = 1024;

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('key must be a non-empty string');
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

export class EventualNamespaceImpl implements EventualNamespace {
  readonly name: string;
  readonly ready: Promise<void>;
  readonly replication: Replicator;
  private readonly local: LocalReplica;
  private readonly feed: ChangeFeed;
  private closed = false;
  /** `ready` resolved: reads need not wait for it. */
  private opened = false;
  /** The time reads use in this turn (see readNow), and how many reads used it. */
  private turnNow: number | undefined;
  private turnReads = 0;
  private failure: Error | undefined;
  /** Lazily loaded rich-value support (yjs, automerge). */
  private rich: RichValues | undefined;
  /** With `gossipBeforeDurable`: hands a local write to gossip before its batch is durable. */
  private readonly gossipEarly: ((bytes: Uint8Array) => void) | undefined;

  constructor(
    name: string,
    private readonly ctx: NodeContext,
    private readonly options: ResolvedEventualOptions,
    private readonly commitQueue: GroupCommit,
  ) {
    this.name = name;
    this.feed = new ChangeFeed(
      ctx,
      { name, replica: () => this.local.replica, ready: () => this.ready },
      options.maxQueuedChanges,
    );
    this.local = new LocalReplica(name, ctx, options, commitQueue, this.feed, () => this.replication.dropOutbox());
    this.replication = new Replicator(this.replicationPort());
    this.gossipEarly = options.gossipBeforeDurable ? (bytes) => this.replication.gossip(bytes) : undefined;
    this.ready = this.open();
    this.ready.then(
      () => {
        this.opened = true;
      },
      () => {},
    );
    this.ready.catch((err: unknown) => {
      this.failure = err as Error;
      ctx.logger.error({ err: String(err), namespace: name }, 'eventual: namespace failed to open');
    });
  }

  private replicationPort(): ReplicationPort {
    const local = this.local;
    const ns = this;
    return {
      name: this.name,
      ctx: this.ctx,
      options: this.options,
      counters: local.counters,
      get closed() {
        return ns.closed;
      },
      now: () => local.now(),
      storedReplicas: () => local.meta.replicas,
      storeReplicas: (replicas) => local.storeReplicas(replicas),
      digest: () => local.replica.digest(),
      deltaFor: (digest) => local.replica.deltaFor(digest),
      checkIncarnation: () => local.checkIncarnation(),
      mergeRemote: (delta, bytes, origin) => local.mergeRemote(delta, bytes, origin),
      noteContact: (now) => local.noteContact(now),
      durable: () => local.durable(),
      richRequest: async (from, body) => (await this.richValues()).handleRequest(from, body),
    };
  }

  private richPort(): RichPort {
    return {
      name: this.name,
      ctx: this.ctx,
      options: this.options,
      counters: this.local.counters,
      protocol: this.replication.protocol,
      commitTo: (source) => this.commitQueue.commit(source),
      retryRead: (read) => this.retryRead(read),
      reject: (peer, err) => this.replication.reject(peer, err),
    };
  }

  /** The CRDT replica (read it; it is replaced when the incarnation changes). */
  get replica(): NamespaceReplica {
    return this.local.replica;
  }

  get replicaId(): string {
    return this.local.replicaId;
  }

  /** Counters of this namespace (read-only view for status, metrics and tests). */
  get counters(): Readonly<NamespaceCounters> {
    return this.local.counters;
  }

  private async open(): Promise<void> {
    const loaded = await this.retryRead(() => loadNamespace(this.ctx.storage.kv, this.name));
    this.local.adopt(loaded);
    this.replication.loadReplicas();
    await this.local.restore(loaded);
    if (this.closed) return;
    this.replication.start();
    this.local.scheduleGc();
  }

  /** Retries a read that failed with a transient storage error (`unavailable`), at most 20 times, 5..100 ms apart. */
  private async retryRead<T>(read: () => Promise<T>): Promise<T> {
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

  private async ensureOpen(): Promise<void> {
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
    if (this.opened) return;
    await this.ready;
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
  }

  /** Resolves once everything applied so far is durable. */
  durable(): Promise<void> {
    return this.local.durable();
  }

  // ---------------------------------------------------------------- writes

  /**
   * One local write (see LocalReplica.write: durable before applied, nothing
   * written on any error), then gossiped (with `gossipBeforeDurable`, already
   * while it was written) and, for 'majority', pushed.
   */
  private async write(
    options: EventualWriteOptions | undefined,
    prepare: (r: NamespaceReplica, now: number, deps: Deps | undefined) => Delta | undefined,
    waited = false,
  ): Promise<Delta | undefined> {
    const consistency = checkConsistency(options?.consistency);
    const timeoutMs = checkTimeout(options?.timeoutMs);
    const replicas = checkReplicas(options?.replicas);
    const session = options?.session;
    await this.ensureOpen();
    if (!waited) await this.catchUp(session, timeoutMs);
    let writer = '';
    const written = await this.local.write((r, now) => {
      writer = r.replicaId;
      // The session's frontier is the write's causal deps: whoever sees the write has seen them.
      const deps = session?.eventual(this.name);
      if (deps !== undefined && !r.covers(deps)) throw this.behind(); // a new incarnation meanwhile
      return prepare(r, now, deps);
    }, this.gossipEarly);
    if (written === undefined) return undefined;
    if (this.gossipEarly === undefined) this.replication.gossip(written.bytes);
    if (consistency === 'majority') await this.replication.pushToMajority(written.bytes, replicas, timeoutMs);
    // The session has seen its own write (its dot on this replica).
    const state = written.delta.states[0] as KeyState;
    if (session) session.observeEventual(this.name, ownDots(state, writer));
    return written.delta;
  }

  /**
   * With a session: checks it (`invalid_argument` beyond the token's limits), then waits,
   * pulling from the replicas known, until this replica covers what it has seen here
   * (`session_behind` after `timeoutMs`, default the request timeout).
   */
  private async catchUp(session: Session | undefined, timeoutMs: number | undefined): Promise<void> {
    if (session === undefined) return;
    const frontier = session.eventual(this.name);
    const ns = this;
    await waitForSession(
      {
        name: this.name,
        ctx: this.ctx,
        covers: (f) => this.local.replica.covers(f),
        pullRound: () => this.replication.pullRound(),
        get closed() {
          return ns.closed;
        },
      },
      frontier,
      timeoutMs ?? this.options.requestTimeoutMs,
    );
    if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
  }

  private behind(): SessionBehindError {
    return new SessionBehindError(`eventual namespace '${this.name}' no longer covers the session`, {
      namespace: this.name,
    });
  }

  /** The session read `key` here: it has seen the dots of the state the key holds (a tombstone's too). */
  private observeRead(session: Session | undefined, key: string): void {
    if (session === undefined) return;
    session.observeEventual(this.name, this.local.replica.dotsOf(key));
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
    options?.session?.check();
    const delta = await this.write(options, (r, now, deps) => {
      const current = r.preparedCurrent(key);
      if (isLive(current, now)) operation = 'updated';
      return r.prepareSet(key, value, now, { ...this.ttlOf(options), deps });
    });
    return { ...this.entryOfWrite(delta), operation };
  }

  async increment(key: string, by = 1, options?: EventualWriteOptions): Promise<EventualEntry> {
    options?.session?.check();
    const delta = await this.write(options, (r, now, deps) =>
      r.prepareIncrement(key, by, now, { ...this.ttlOf(options), deps }),
    );
    return this.entryOfWrite(delta);
  }

  async delete(key: string, options?: EventualWriteOptions): Promise<boolean> {
    checkKey(key);
    const session = options?.session;
    session?.check();
    const timeoutMs = checkTimeout(options?.timeoutMs);
    await this.ensureOpen();
    await this.catchUp(session, timeoutMs);
    // A 'majority' delete first learns what a majority holds, so it deletes what they have seen.
    if (options?.consistency === 'majority') {
      const replicas = checkReplicas(options.replicas);
      await this.replication.pullFromMajority(replicas, timeoutMs);
    }
    const delta = await this.write(
      options,
      (r, now, deps) => {
        // Not live here: nothing to delete, and nothing is written (see docs/guarantees.md).
        if (!isLive(r.preparedCurrent(key), now)) return undefined;
        return r.prepareDelete(key, now, { deps });
      },
      true,
    );
    // Nothing written: the session read the key as absent here.
    if (delta === undefined) this.observeRead(session, key);
    return delta !== undefined;
  }

  // ---------------------------------------------------------------- reads

  async get(key: string, options?: EventualReadOptions): Promise<EventualEntry | undefined> {
    if (options === undefined && this.opened && !this.closed) return this.read(key);
    const consistency = checkConsistency(options?.consistency);
    const timeoutMs = checkTimeout(options?.timeoutMs);
    const replicas = checkReplicas(options?.replicas);
    checkKey(key);
    const session = options?.session;
    session?.check();
    await this.ensureOpen();
    await this.catchUp(session, timeoutMs);
    if (consistency === 'majority') await this.replication.pullFromMajority(replicas, timeoutMs);
    const entry = this.read(key);
    this.observeRead(session, key);
    return entry;
  }

  /**
   * The local entry of `key` now, synchronously: what `get(key)` resolves to,
   * without a promise, frozen (the same object for every read of an unchanged
   * key). Throws `unavailable` while the namespace is still
   * opening (the first `await get(…)` waits for it), `closed` once it is closed.
   */
  peek(key: string): Readonly<EventualEntry> | undefined {
    if (!this.opened || this.closed) {
      if (this.closed) throw new ClosedError(`eventual namespace '${this.name}'`);
      throw (
        this.failure ?? new UnavailableError(`eventual namespace '${this.name}' is still opening; await a get() first`)
      );
    }
    checkKey(key);
    const e = this.local.replica.get(key, this.readNow());
    return e ? readOnlyEntry(this.name, key, e) : undefined;
  }

  /** The live entry of `key` in the replica now, as a fresh object (the namespace is open). */
  private read(key: string): EventualEntry | undefined {
    checkKey(key);
    const e = this.local.replica.get(key, this.readNow());
    return e ? toEventualEntry(this.name, key, e) : undefined;
  }

  /**
   * The time reads judge expiry by: the clock read once per synchronous turn
   * (and again every READS_PER_CLOCK reads within one), so a loop of reads
   * pays one clock read, not one each (on a VM a clock read can cost more than
   * the lookup). Reads in one turn see the instant of its first read, at most
   * that turn's length in the past: an entry may read as live until the turn
   * ends, never as expired early. Writes read the clock themselves.
   */
  private readNow(): number {
    if (this.turnNow !== undefined && this.turnReads++ < READS_PER_CLOCK) return this.turnNow;
    if (this.turnNow === undefined) microtask(this.endTurn);
    this.turnReads = 0;
    this.turnNow = this.local.now();
    return this.turnNow;
  }

  private readonly endTurn = (): void => {
    this.turnNow = undefined;
  };

  async list(query: ListQuery = {}): Promise<ListPage<EventualEntry>> {
    await this.ensureOpen();
    const entries = this.local.replica.entries(this.readNow());
    return listEntries(entries, query, (key, e) => toEventualEntry(this.name, key, e));
  }

  // ---------------------------------------------------------------- watch

  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
    if (typeof callback !== 'function') throw new InvalidArgumentError('watch needs a callback');
    return this.feed.watch(options ?? {}, callback);
  }

  changes(options: WatchOptions = {}): AsyncIterable<EventualChange> {
    return this.feed.changes(options);
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

  private async richValues(): Promise<RichValues> {
    if (!this.rich) {
      const { RichValues } = await richModule();
      this.rich ??= new RichValues(this.richPort());
    }
    return this.rich;
  }

  // ---------------------------------------------------------------- client replicas

  /**
   * The port a door uses to keep a client replica (a browser tab, docs/browser.md)
   * in sync through this node; see client-replication.ts.
   */
  clientReplication(): ClientReplication {
    const ns = this;
    const local = this.local;
    return {
      namespace: this.name,
      ready: this.ready,
      maxTtlSeconds: this.options.maxTtlSeconds,
      maxValueBytes: this.options.maxValueBytes,
      now: () => local.now(),
      digest: () => {
        local.checkIncarnation();
        return local.replica.digest();
      },
      deltaFor: (digest) => {
        local.checkIncarnation();
        return local.replica.deltaFor(digest);
      },
      async push(bytes, client) {
        if (ns.closed) throw new ClosedError(`eventual namespace '${ns.name}'`);
        local.checkIncarnation();
        let delta: Delta;
        try {
          delta = ns.replication.checkedDelta(bytes);
          const changed = local.mergeRemote(delta, bytes, client);
          // A client reaches the cluster through this node: its writes travel on as gossip.
          if (changed > 0) ns.replication.gossip(bytes);
        } catch (err) {
          ns.replication.reject(client, err);
          throw err;
        }
        await local.durable();
        return delta;
      },
      onChange: (callback) => this.feed.watch({}, () => callback()),
    };
  }

  // ---------------------------------------------------------------- lifecycle

  status(): NamespaceStatus {
    const now = this.local.now();
    return {
      name: this.name,
      kind: 'eventual',
      keys: this.failure ? 0 : this.local.replica.liveCount(now),
      bytes: this.local.store.bytes,
      lastAntiEntropyAt: this.local.lastAntiEntropyAt,
    };
  }

  /** Stops timers and replication, and writes what is pending. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.feed.stopExpiry();
    this.local.stop();
    this.replication.stop();
    this.rich?.stop();
    await this.ready.catch(() => {});
    if (this.local.store.hasPending) await this.local.durable().catch(() => {});
    if (this.rich) await this.commitQueue.commit(this.rich).catch(() => {});
    if (this.failure === undefined) await this.local.markClosed().catch(() => {});
    this.feed.close();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

export type { Automerge, Y };
