/**
 * This node's replica of one eventual namespace: the NamespaceReplica of
 * @parley/crdt, its store (persist.ts), the incarnation rule, its counters,
 * local writes (durable before applied) and the merge of peers' deltas.
 *
 * Rules:
 * - Durable before applied: a local write is planned without changing the
 *   replica (`prepare*`), written by the group commit, and applied only once
 *   its batch is on disk; only then is it readable and reported to watchers.
 *   A failed batch applies nothing (its writes, and those prepared after
 *   them, fail with its error).
 * - Every local and remote change is reported once to the change feed, with
 *   its origin.
 * - Incarnations: a replica that completed no anti-entropy round for longer
 *   than the tombstone grace period discards its state and continues under
 *   a new replica id (`<peerId>~<n>`), so it cannot bring back what its peers
 *   have collected (see @parley/crdt INTERNALS). The rule is applied when the
 *   namespace opens and before anything of the state is used with a peer or
 *   extended by a write.
 * - Early gossip (`gossipBeforeDurable`): a local write is handed to gossip
 *   once planned, before its batch is durable. A write that is then not
 *   applied fails with `outcome_unknown` (peers may hold it), and a restore
 *   that finds the last run did not close cleanly (`meta.open`) continues
 *   under a new replica id with its state kept, so no dot a peer may hold is
 *   ever given to a different write.
 */
import { type Delta, encodeDelta, type KeyState, NamespaceReplica } from '@parley/crdt';
import { type Cancel, isParleyError, OutcomeUnknownError, type PeerId, UnavailableError } from '@parley/interface';
import type { NodeContext } from '../context.js';
import type { CommitSource, GroupCommit } from '../group-commit.js';
import type { ChangeFeed } from './change-feed.js';
import type { ResolvedEventualOptions } from './options.js';
import { type LoadedNamespace, maxWallOf, type NamespaceMeta, NamespaceStore } from './persist.js';

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
  /** Gossip messages sent by direct fan-out (each to every connected peer). */
  directGossip: number;
  /** Gossip messages published on gossipsub while direct fan-out was on but a recent replica was out of reach. */
  meshFallbacks: number;
  /** Restores after an unclean stop that continued under a new replica id, state kept (`gossipBeforeDurable`). */
  writerRotations: number;
}

function newCounters(): NamespaceCounters {
  return {
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
    directGossip: 0,
    meshFallbacks: 0,
    writerRotations: 0,
  };
}

export class LocalReplica implements CommitSource {
  readonly store: NamespaceStore;
  readonly counters: NamespaceCounters = newCounters();
  /** When the last anti-entropy round completed (physical ms), or null. */
  lastAntiEntropyAt: number | null = null;
  private current: NamespaceReplica;
  private gcTimer: Cancel | undefined;
  /** Pending write of merged remote deltas (see commitRemote). */
  private remoteCommitTimer: Cancel | undefined;
  private stopped = false;

  constructor(
    readonly name: string,
    private readonly ctx: NodeContext,
    private readonly options: ResolvedEventualOptions,
    private readonly commitQueue: GroupCommit,
    private readonly feed: ChangeFeed,
    /** Called when the replica switches to a new incarnation (unsent gossip of the old one must go). */
    private readonly onReincarnate: () => void,
  ) {
    this.current = this.newReplica(0);
    this.store = new NamespaceStore(name, options.compactLogBytes);
  }

  /** The CRDT replica; replaced by a new one when the incarnation changes. */
  get replica(): NamespaceReplica {
    return this.current;
  }

  get replicaId(): string {
    return this.current.replicaId;
  }

  get meta(): NamespaceMeta {
    return this.store.meta;
  }

  now(): number {
    return this.ctx.clock.nowMs();
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

  // ---------------------------------------------------------------- restore and incarnations

  /** Takes over what restore found on disk (its records and meta; the state follows in `restore`). */
  adopt(loaded: LoadedNamespace): void {
    this.store.adopt(loaded);
  }

  /** Rebuilds the replica from what restore found, or starts a new incarnation when the rule says so. */
  async restore(loaded: LoadedNamespace): Promise<void> {
    this.counters.tornRecords += loaded.tornKeys.length;
    const now = this.now();
    if (this.outOfContact(now)) {
      await this.reincarnate();
    } else {
      // With early gossip, a run that did not close cleanly may have sent writes it then lost:
      // their dots live on at peers, so this run writes under the next replica id.
      const rotate = this.options.gossipBeforeDurable && this.store.meta.open === true;
      const incarnation = this.store.meta.incarnation + (rotate ? 1 : 0);
      this.current = this.newReplica(incarnation);
      const at = Math.max(now, loaded.maxWallMs);
      // The node's own records, checked when written and read back under a checksum that passed
      // (a record whose checksum fails never gets here): restored without checking them again.
      // Each was applied before the crash, in this order: replayed without waiting for causal deps.
      this.current.restore(loaded.deltas, at);
      if (rotate) {
        this.counters.writerRotations++;
        this.store.setMeta({ ...this.store.meta, incarnation });
        this.ctx.logger.info(
          { namespace: this.name, incarnation },
          'eventual: the last run did not close cleanly; local writes continue under a new replica id',
        );
      }
    }
    // Durable before the first write can be gossiped early: a crash from here on is seen by the next restore.
    if (this.options.gossipBeforeDurable) {
      this.store.setMeta({ ...this.store.meta, open: true });
      await this.durable();
    }
  }

  /** A clean close: clears `meta.open` (durably), so the next restore keeps the replica id. */
  async markClosed(): Promise<void> {
    if (this.store.meta.open !== true) return;
    const { open: _, ...meta } = this.store.meta;
    this.store.setMeta(meta);
    await this.durable();
  }

  /** True when the incarnation rule requires a new replica id. */
  private outOfContact(now: number): boolean {
    const lastContactMs = this.store.meta.lastContactMs;
    return this.options.incarnations && lastContactMs !== null && now - lastContactMs > this.options.tombstoneGraceMs;
  }

  /**
   * Applies the incarnation rule before anything of this replica's state is
   * used with a peer or extended by a write: checked at every local write,
   * every anti-entropy round, every request served and every gossip received.
   */
  checkIncarnation(): void {
    if (this.outOfContact(this.now())) this.reincarnate().catch(() => {});
  }

  /**
   * Discards the local state and continues under a new replica id (the
   * incarnation rule); entries watchers saw are reported as expired. Resolves
   * once the new meta is durable.
   */
  private reincarnate(): Promise<void> {
    const meta = this.store.meta;
    const incarnation = meta.incarnation + 1;
    this.ctx.logger.warn(
      { namespace: this.name, lastContactMs: meta.lastContactMs, incarnation },
      'eventual: out of contact longer than the tombstone grace period; discarding state under a new replica id',
    );
    const now = this.now();
    const before = this.feed.active ? this.current.entries(now) : [];
    this.store.discardAll(new UnavailableError(`namespace '${this.name}' restarted under a new replica id; retry`));
    this.store.setMeta({ ...meta, incarnation, lastContactMs: null });
    this.current = this.newReplica(incarnation);
    this.counters.incarnations++;
    this.onReincarnate();
    for (const [key] of before) this.feed.emit({ namespace: this.name, key, type: 'expire', origin: 'local' });
    return this.commitQueue.commit(this);
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

  /** Updates the known replicas kept in the meta (written with the next batch, which this starts). */
  storeReplicas(replicas: NamespaceMeta['replicas']): void {
    this.store.setMeta({ ...this.store.meta, replicas });
    this.durable().catch(() => {});
  }

  // ---------------------------------------------------------------- CommitSource

  collect() {
    return this.store.collect(this.current);
  }

  /** The batch is durable: its local writes are applied now, in order, and reported to watchers. */
  committed(): void {
    const writes = this.store.committed();
    if (writes.length === 0) return;
    const now = this.now();
    for (const w of writes) {
      if (w.outcome !== 'pending') continue;
      if (w.replica !== this.current) {
        // Prepared by an incarnation that was discarded meanwhile: the new one never had it.
        w.outcome = 'failed';
        w.error = new UnavailableError(`namespace '${this.name}' restarted under a new replica id; retry`);
        continue;
      }
      const key = (w.delta.states[0] as KeyState).key;
      const wasLive = this.feed.active && this.current.get(key, now) !== undefined;
      this.current.applyPrepared(w.delta, now);
      w.outcome = 'applied';
      this.feed.report(key, wasLive, now, 'local');
    }
  }

  /** The batch failed: none of its local writes, nor any prepared since, is applied (each fails). */
  commitFailed(err: unknown): void {
    const writes = this.store.failed(err);
    if (writes.length === 0) return;
    for (const r of new Set(writes.map((w) => w.replica))) r.discardPrepared();
  }

  /** Resolves once everything applied so far is durable. */
  durable(): Promise<void> {
    return this.commitQueue.commit(this);
  }

  // ---------------------------------------------------------------- local writes

  /**
   * One local write, durable before it is applied: `prepare` plans it on the
   * replica without changing what readers and peers see, the group commit
   * writes it, and only then is it applied (`committed`). If the batch fails,
   * nothing of it is applied and the caller gets the batch's error. Returns
   * the delta and its encoding (for gossip), or undefined when `prepare`
   * found nothing to write. With `early`, the encoding is handed to it before
   * the batch is durable, and a write then not applied fails with
   * `outcome_unknown` (its cause in `details.cause`): peers may hold it.
   */
  async write(
    prepare: (r: NamespaceReplica, now: number) => Delta | undefined,
    early?: (bytes: Uint8Array) => void,
  ): Promise<{ delta: Delta; bytes: Uint8Array } | undefined> {
    this.checkIncarnation();
    const fault = this.commitQueue.fault;
    if (fault) throw fault;
    const replica = this.current;
    const delta = prepare(replica, this.now());
    if (delta === undefined) return undefined;
    const bytes = encodeDelta(delta);
    const w = this.store.appendLocal(delta, bytes, replica);
    const committing = this.commitQueue.commit(this);
    early?.(bytes);
    try {
      await committing;
    } catch (err) {
      throw this.notApplied(w.error ?? err, early !== undefined);
    }
    if (w.outcome !== 'applied') {
      throw this.notApplied(
        w.error ?? new UnavailableError(`write to '${this.name}' was not applied`),
        early !== undefined,
      );
    }
    return { delta, bytes };
  }

  /** The error of a local write that was not applied: `outcome_unknown` once it may have been gossiped. */
  private notApplied(err: unknown, gossiped: boolean): unknown {
    if (!gossiped) return err;
    return new OutcomeUnknownError(
      `write to '${this.name}' was gossiped but not made durable here; peers may hold it`,
      {
        namespace: this.name,
        cause: isParleyError(err) ? err.code : String(err),
      },
    );
  }

  // ---------------------------------------------------------------- remote deltas

  /** Merges a delta from a peer; persists and reports what changed. Returns the changed key count. */
  mergeRemote(delta: Delta, bytes: Uint8Array | undefined, origin: PeerId): number {
    const now = this.now();
    let before: Map<string, boolean> | undefined;
    if (this.feed.active) {
      before = new Map();
      for (const s of delta.states) before.set(s.key, this.current.get(s.key, now) !== undefined);
      // Held deltas this merge may release (their deps covered now) report their keys too.
      if (this.current.pendingCount > 0)
        for (const key of this.current.pendingKeys()) before.set(key, this.current.get(key, now) !== undefined);
    }
    const result = this.current.merge(delta, now);
    if (result.rejectedStates > 0) {
      this.counters.driftRejections += result.rejectedStates;
      this.ctx.events.emit('reject:drift', { namespace: this.name, count: result.rejectedStates, peer: origin });
      this.ctx.logger.warn(
        { namespace: this.name, peer: origin, states: result.rejectedStates },
        'eventual: refused states stamped too far ahead (clock drift)',
      );
    }
    // A delta that changed no key may still have grown the context (ranges of superseded or collected
    // writes): persist it too, so a restart replays every change in order (causal deps rely on it).
    const grewContext = result.held !== true && result.rejectedStates === 0 && delta.context.size > 0;
    if (result.changedKeys.length === 0 && !grewContext) return 0;
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
      // Held deltas this merge applied (their deps covered now) are persisted after it.
      for (const d of result.released ?? []) this.store.append(encodeDelta(d));
      this.commitRemote();
    }
    if (result.changedKeys.length === 0) return 0;
    this.counters.deltasApplied++;
    this.ctx.events.emit('delta:applied', { namespace: this.name, keys: result.changedKeys.length, origin });
    if (before) for (const key of result.changedKeys) this.feed.report(key, before.get(key) === true, now, origin);
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

  // ---------------------------------------------------------------- collection and lifecycle

  /** Collects tombstones and expired entries every `gcIntervalMs` until stopped. */
  scheduleGc(): void {
    if (this.stopped) return;
    this.gcTimer = this.ctx.scheduler.after(this.options.gcIntervalMs, () => {
      this.gcTimer = undefined;
      if (this.stopped) return;
      this.current.gc(this.now());
      this.scheduleGc();
    });
  }

  /** Cancels the timers (collection, the pending remote write); what is pending stays for a last commit. */
  stop(): void {
    this.stopped = true;
    this.gcTimer?.();
    this.remoteCommitTimer?.();
    this.remoteCommitTimer = undefined;
  }
}
