import { InvalidArgumentError, NamespaceFullError, ValueTooLargeError } from '@parley/interface';
import { CollectedFloors, collectableAt } from './collected.js';
import { DotContext, subtractRanges } from './context.js';
import { DotIndex } from './dot-index.js';
import { compareHlc, HLC_ZERO, type Hlc, HybridLogicalClock } from './hlc.js';
import { normalizeJson, utf8Length, wellFormedUtf8Length } from './json.js';
import {
  entryOf,
  expiresAtOf,
  forEachDot,
  holdsDot,
  joinKeyStates,
  latestStampOf,
  maxLogicalAt,
  maxWallOf,
  seenBy,
  sortShares,
} from './key-state.js';
import { MAX_DEPS, MAX_SEQ } from './limits.js';
import { depsCovered, PendingDeltas } from './pending.js';
import { addToShare } from './pn-counter.js';
import { Register } from './register.js';
import { type GcOptions, type NamespaceReplicaOptions, resolveReplicaOptions } from './replica-options.js';
import { restoreRecords } from './restore.js';
import type {
  CounterShare,
  Delta,
  Deps,
  Digest,
  DotRanges,
  Entry,
  GcResult,
  JsonValue,
  KeyState,
  MergeResult,
  ReplicaStats,
  SetOptions,
  TombstoneState,
  WriteDeps,
} from './types.js';
import { checkDelta, checkDeps, checkDigest } from './validate.js';

export { entryOf, expiresAtOf, forEachDot, joinKeyStates } from './key-state.js';
export { MAX_TTL_SECONDS } from './limits.js';
export { DEFAULT_MAX_PENDING_DELTAS, DEFAULT_MAX_PENDING_STATES } from './pending.js';
export {
  DEFAULT_MAX_KEY_BYTES,
  DEFAULT_MAX_LIVE_KEYS,
  DEFAULT_MAX_VALUE_BYTES,
  DEFAULT_TTL_SECONDS,
  type GcOptions,
  type NamespaceReplicaOptions,
} from './replica-options.js';

const EMPTY_RANGES: DotRanges = new Map();

/** Canonical order of key states in deltas and encodings: by key. */
function byKey(a: KeyState, b: KeyState): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * One replica of one eventual namespace: a delta-state map from keys to LWW
 * registers, PN-counter incarnations and tombstones, with replicated expiry.
 * Every local operation returns the delta to gossip; `merge` accepts deltas,
 * anti-entropy replies and full states alike.
 *
 * Errors: InvalidArgumentError (bad key, TTL, amount, namespace, time),
 * ValueTooLargeError, NamespaceFullError. On error nothing changes.
 */
export class NamespaceReplica {
  readonly namespace: string;
  readonly replicaId: string;
  readonly clock: HybridLogicalClock;
  readonly maxValueBytes: number;
  readonly maxLiveKeys: number;
  readonly maxKeyBytes: number;
  readonly defaultTtlSeconds: number;
  readonly maxTtlSeconds: number;
  readonly tombstoneGraceMs: number;

  private readonly states = new Map<string, KeyState>();
  private readonly ctx = new DotContext();
  private readonly index = new DotIndex();
  private liveDots = 0;
  private localSeq = 0;
  private tombstoneCount = 0;
  private driftRejections = 0;
  private readonly collected: CollectedFloors;
  /** Local writes prepared (prepareSet, prepareIncrement, prepareDelete) and not yet applied or discarded. */
  private readonly prepared = new Set<KeyState>();
  /** The latest prepared write of each key: later local writes of the key build on it. */
  private readonly preparedLatest = new Map<string, KeyState>();
  /** Deltas waiting for their causal dependencies (INTERNALS §7). */
  private readonly pending: PendingDeltas;

  constructor(options: NamespaceReplicaOptions) {
    const o = resolveReplicaOptions(options);
    this.namespace = o.namespace;
    this.replicaId = o.replicaId;
    this.clock = new HybridLogicalClock(o.replicaId, { maxClockDriftMs: o.maxClockDriftMs });
    this.maxValueBytes = o.maxValueBytes;
    this.maxLiveKeys = o.maxLiveKeys;
    this.maxKeyBytes = o.maxKeyBytes;
    this.maxTtlSeconds = o.maxTtlSeconds;
    this.defaultTtlSeconds = o.defaultTtlSeconds;
    this.tombstoneGraceMs = o.tombstoneGraceMs;
    this.checkTtl(this.defaultTtlSeconds);
    this.collected = new CollectedFloors(this.tombstoneGraceMs, this.clock.maxClockDriftMs);
    this.pending = new PendingDeltas(o.maxPendingDeltas, o.maxPendingStates);
  }

  // ---- local operations ----

  /** Writes an LWW register. Returns the delta to gossip. */
  set(key: string, value: JsonValue, nowMs: number, options: SetOptions = {}): Delta {
    const current = this.states.get(key);
    const deps = this.checkWriteDeps(options.deps, current);
    return this.applyLocal(key, this.planSet(key, value, nowMs, options, current), current, deps);
  }

  /**
   * Adds `by` (a safe integer; negative decrements) to a PN-counter and renews
   * its TTL. On an absent, expired or deleted key it starts a new counter at `by`.
   * Incrementing a live register is an InvalidArgumentError.
   */
  increment(key: string, by: number, nowMs: number, options: SetOptions = {}): Delta {
    const current = this.states.get(key);
    const deps = this.checkWriteDeps(options.deps, current);
    return this.applyLocal(key, this.planIncrement(key, by, nowMs, options, current), current, deps);
  }

  /** Deletes a key with a tombstone (even when it is absent here: it may live elsewhere). */
  delete(key: string, nowMs: number, options: WriteDeps = {}): Delta {
    const current = this.states.get(key);
    const deps = this.checkWriteDeps(options.deps, current);
    return this.applyLocal(key, this.planDelete(key, nowMs), current, deps);
  }

  // ---- prepared local writes (persist first, then apply) ----

  /**
   * `set`, planned but not applied: returns the same delta and changes nothing
   * a reader or a peer can see (only the clock and the sequence counter move).
   * Apply it with `applyPrepared` once it is durable, or drop it with
   * `discardPrepared`. A later local write of the same key builds on it, as it
   * would on the applied write.
   */
  prepareSet(key: string, value: JsonValue, nowMs: number, options: SetOptions = {}): Delta {
    const current = this.preparedCurrent(key);
    const deps = this.checkWriteDeps(options.deps, current);
    return this.prepareLocal(key, this.planSet(key, value, nowMs, options, current), current, deps);
  }

  /** `increment`, planned but not applied (see prepareSet). */
  prepareIncrement(key: string, by: number, nowMs: number, options: SetOptions = {}): Delta {
    const current = this.preparedCurrent(key);
    const deps = this.checkWriteDeps(options.deps, current);
    return this.prepareLocal(key, this.planIncrement(key, by, nowMs, options, current), current, deps);
  }

  /** `delete`, planned but not applied (see prepareSet). */
  prepareDelete(key: string, nowMs: number, options: WriteDeps = {}): Delta {
    const current = this.preparedCurrent(key);
    const deps = this.checkWriteDeps(options.deps, current);
    return this.prepareLocal(key, this.planDelete(key, nowMs), current, deps);
  }

  /**
   * The state a local write of `key` would see: the held state joined with the
   * latest prepared write of the key (undefined when neither exists).
   */
  preparedCurrent(key: string): KeyState | undefined {
    const held = this.states.get(key);
    const mine = this.preparedLatest.get(key);
    if (mine === undefined) return held;
    return held === undefined ? mine : joinKeyStates(held, mine);
  }

  /**
   * Applies a delta returned by a prepare call, joined with whatever was merged
   * meanwhile: the replica then holds what a peer holds once it merges the
   * same delta. Returns whether the key's state changed. A delta that is not
   * an outstanding prepared write is an InvalidArgumentError.
   */
  applyPrepared(delta: Delta, nowMs: number): boolean {
    const next = delta.states.length === 1 ? delta.states[0] : undefined;
    if (next === undefined || !this.prepared.has(next)) {
      throw new InvalidArgumentError('not an outstanding prepared write of this replica');
    }
    this.prepared.delete(next);
    if (this.preparedLatest.get(next.key) === next) this.preparedLatest.delete(next.key);
    const changed = this.joinState(next, nowMs);
    this.ctx.addAll(delta.context);
    return changed;
  }

  /** Drops every outstanding prepared write (their sequence numbers stay spent). */
  discardPrepared(): void {
    this.prepared.clear();
    this.preparedLatest.clear();
  }

  /** Prepared writes not yet applied or discarded. */
  get preparedCount(): number {
    return this.prepared.size;
  }

  private prepareLocal(key: string, next: KeyState, current: KeyState | undefined, deps: Deps | undefined): Delta {
    this.prepared.add(next);
    this.preparedLatest.set(key, next);
    return this.localDelta(next, this.supersededBy(next, current), deps);
  }

  private localDelta(next: KeyState, context: DotRanges, deps: Deps | undefined): Delta {
    const delta: Delta = { namespace: this.namespace, states: [next], context };
    return deps === undefined ? delta : { ...delta, deps };
  }

  /**
   * A local write's deps, checked (at most MAX_DEPS origins, counters in
   * 1..MAX_SEQ, each covered here: what this replica writes after must be
   * visible after them everywhere) and without entries of counter 0;
   * undefined when none is left. InvalidArgumentError otherwise.
   *
   * A write with deps that builds on a held state (it supersedes it, or a
   * counter carries its other shares) also depends on this replica's whole
   * prefix frontier: a receiver adds the dots it supersedes or carries to
   * its context, and must then hold their causal past too (INTERNALS §7).
   */
  private checkWriteDeps(deps: Deps | undefined, current: KeyState | undefined): Deps | undefined {
    if (deps === undefined) return undefined;
    checkDeps(deps);
    let out: Map<string, number> | undefined;
    if (current !== undefined) {
      out = this.ctx.prefixFrontier();
      if (out.size === 0) out = undefined;
    }
    for (const [origin, seq] of deps) {
      if (seq === 0) continue;
      if (!this.ctx.coversPrefix(origin, seq)) {
        throw new InvalidArgumentError(`write depends on ${origin}:${seq}, which replica '${this.replicaId}' lacks`, {
          origin,
          seq,
        });
      }
      out ??= new Map();
      if (seq > (out.get(origin) ?? 0)) out.set(origin, seq);
    }
    if (out !== undefined && out.size > MAX_DEPS) {
      throw new InvalidArgumentError(`a write with a session would depend on more than ${MAX_DEPS} origins`);
    }
    return out;
  }

  private planSet(
    key: string,
    value: JsonValue,
    nowMs: number,
    options: SetOptions,
    current: KeyState | undefined,
  ): KeyState {
    this.checkKey(key);
    const ttlSeconds = this.checkTtl(options.ttlSeconds ?? this.defaultTtlSeconds);
    const json = normalizeJson(value);
    if (json.text.length * 3 > this.maxValueBytes) {
      const size = utf8Length(json.text);
      if (size > this.maxValueBytes) throw new ValueTooLargeError(size, this.maxValueBytes);
    }
    const live = current !== undefined && nowMs < expiresAtOf(current);
    if (!live) this.checkRoom(nowMs);
    const stamp = this.clock.now(nowMs);
    const createdAt = live && current.type !== 'tombstone' ? current.createdAt : stamp.wallMs;
    return new Register(
      key,
      stamp.wallMs,
      stamp.logical,
      stamp.node,
      this.nextSeq(),
      ttlSeconds,
      createdAt,
      json.value,
    );
  }

  private planIncrement(
    key: string,
    by: number,
    nowMs: number,
    options: SetOptions,
    current: KeyState | undefined,
  ): KeyState {
    this.checkKey(key);
    const ttlSeconds = this.checkTtl(options.ttlSeconds ?? this.defaultTtlSeconds);
    if (!Number.isSafeInteger(by)) throw new InvalidArgumentError(`increment must be a safe integer, got ${by}`);
    const live = current !== undefined && nowMs < expiresAtOf(current);
    if (live && current.type === 'register') {
      throw new InvalidArgumentError(`key '${key}' holds a register, not a counter`, { key });
    }
    const mine = live && current.type === 'counter' ? current.shares.get(this.replicaId) : undefined;
    const amounts = addToShare(mine ?? { inc: 0, dec: 0 }, by);
    if (!live) this.checkRoom(nowMs);
    const stamp = this.clock.now(nowMs);
    const share: CounterShare = {
      inc: amounts.inc,
      dec: amounts.dec,
      wallMs: stamp.wallMs,
      logical: stamp.logical,
      seq: this.nextSeq(),
      ttlSeconds,
    };
    if (live && current.type === 'counter') {
      const shares = new Map(current.shares);
      shares.set(this.replicaId, share);
      // The whole incarnation travels (one share per replica that counted): a replica
      // that has collected it meanwhile gets it back whole, not as this share alone.
      return { ...current, shares: sortShares(shares) };
    }
    const base = this.incarnationBase(key, current, nowMs);
    return {
      type: 'counter',
      key,
      wallMs: base.wallMs,
      logical: base.logical,
      node: base.node,
      createdAt: stamp.wallMs,
      shares: new Map([[this.replicaId, share]]),
    };
  }

  private planDelete(key: string, nowMs: number): TombstoneState {
    this.checkKey(key);
    const stamp = this.clock.now(nowMs);
    return {
      type: 'tombstone',
      key,
      wallMs: stamp.wallMs,
      logical: stamp.logical,
      node: stamp.node,
      seq: this.nextSeq(),
    };
  }

  // ---- reads ----

  /** The live entry under `key`, or undefined when absent, deleted or expired at `nowMs`. */
  get(key: string, nowMs: number): Entry | undefined {
    const state = this.states.get(key);
    if (state === undefined) return undefined;
    if (state.type === 'register') {
      // Registers are held as Register objects (see install), which are entries.
      return nowMs < state.wallMs + state.ttlSeconds * 1000 ? (state as Register) : undefined;
    }
    if (state.type === 'tombstone') return undefined;
    const entry = entryOf(state);
    return nowMs < entry.expiresAt ? entry : undefined;
  }

  /** Live keys at `nowMs`, sorted. */
  keys(nowMs: number): string[] {
    return this.entries(nowMs).map(([k]) => k);
  }

  /** Live entries at `nowMs`, sorted by key. */
  entries(nowMs: number): Array<[string, Entry]> {
    const out: Array<[string, Entry]> = [];
    for (const key of this.states.keys()) {
      const e = this.get(key, nowMs);
      if (e) out.push([key, e]);
    }
    return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  /** Live keys at `nowMs`. O(states). */
  liveCount(nowMs: number): number {
    let n = 0;
    for (const state of this.states.values()) if (nowMs < expiresAtOf(state)) n++;
    return n;
  }

  /**
   * The dots of the state `key` holds (a register's or tombstone's dot, each
   * counter share's), also when it reads as absent (deleted, expired); empty
   * when the key holds nothing. A session that read the key has seen them.
   */
  dotsOf(key: string): Array<[string, number]> {
    const state = this.states.get(key);
    const out: Array<[string, number]> = [];
    if (state !== undefined) forEachDot(state, (node, seq) => out.push([node, seq]));
    return out;
  }

  /** Whether the context holds every dot `(origin, 1..seq)` of `frontier` (a session's, or deps). */
  covers(frontier: ReadonlyMap<string, number>): boolean {
    for (const [origin, seq] of frontier) if (!this.ctx.coversPrefix(origin, seq)) return false;
    return true;
  }

  /** The raw state of one key (including tombstones and expired entries), for tests and tools. */
  stateOf(key: string): KeyState | undefined {
    return this.states.get(key);
  }

  // ---- replication ----

  /**
   * Joins a delta (a local operation's, an anti-entropy reply, or a full state).
   * Commutative, associative and idempotent. A key state with a stamp more than
   * maxClockDriftMs ahead of `nowMs` is refused and counted (it comes back with
   * a later anti-entropy round once it is within bounds); the rest is applied.
   * A malformed delta, or one beyond this replica's limits (key and value size,
   * TTL, sequence numbers, value depth), is refused whole with
   * InvalidArgumentError, and nothing of it is applied.
   *
   * `{ checked: true }` skips that whole-delta check, for a delta this replica
   * checked before and kept intact: its own durable records, read back under a
   * checksum that passed (a node's restore). Never for bytes from a peer.
   * `{ ignoreDeps: true }` applies it without waiting for its causal deps:
   * for a replay, in order, of deltas this replica applied before.
   */
  merge(delta: Delta, nowMs: number, options?: { checked?: boolean; ignoreDeps?: boolean }): MergeResult {
    if (options?.checked !== true) checkDelta(delta, this);
    if (delta.namespace !== this.namespace) {
      throw new InvalidArgumentError(`delta of namespace '${delta.namespace}' merged into '${this.namespace}'`);
    }
    if (!Number.isSafeInteger(nowMs) || nowMs < 0)
      throw new InvalidArgumentError('nowMs must be a non-negative integer');
    const changedKeys: string[] = [];
    if (delta.deps !== undefined && options?.ignoreDeps !== true && !depsCovered(this.ctx, delta)) {
      // Invisible until the deps are covered: not applied, its dots not in the context.
      if (!delta.states.every((s) => this.ctx.seenAll(s))) this.pending.hold(delta);
      return { changedKeys, rejectedStates: 0, held: true };
    }
    let { rejectedStates } = this.applyDelta(delta, nowMs, changedKeys);
    const released: Delta[] = [];
    if (this.pending.size > 0) rejectedStates += this.release(nowMs, changedKeys, released);
    if (released.length === 0) return { changedKeys, rejectedStates };
    return { changedKeys: [...new Set(changedKeys)], rejectedStates, released };
  }

  /**
   * Applies the held deltas whose deps are now covered, until none is left
   * (each one applied may cover another's), and drops those whose states are
   * all seen already. Returns the states refused for clock drift.
   */
  private release(nowMs: number, changedKeys: string[], released: Delta[]): number {
    let rejected = 0;
    let progress = true;
    while (progress) {
      progress = false;
      for (const d of this.pending.list()) {
        if (d.states.every((s) => this.ctx.seenAll(s))) {
          this.pending.remove(d);
          continue;
        }
        if (d.deps !== undefined && !depsCovered(this.ctx, d)) continue;
        this.pending.remove(d);
        const applied = this.applyDelta(d, nowMs, changedKeys);
        rejected += applied.rejectedStates;
        released.push(applied.record);
        progress = true;
      }
    }
    return rejected;
  }

  /**
   * Rebuilds a replica that holds nothing yet from its own durable records, in
   * the order they were applied: the same replica as
   * `merge(d, nowMs, { checked: true, ignoreDeps: true })` of each in turn
   * builds, but a fresh register or tombstone (restore.ts) goes straight into
   * the state map, dot index and context; a snapshot written in dot order is
   * all fresh. Only for deltas this replica checked when it wrote them and
   * read back under a checksum that passed (never bytes from a peer).
   * InvalidArgumentError when the replica is not empty, the time is bad or a
   * delta belongs to another namespace (nothing of that delta is applied).
   */
  restore(deltas: readonly Delta[], nowMs: number): void {
    if (this.states.size > 0 || this.ctx.size().origins > 0 || this.pending.size > 0 || this.prepared.size > 0) {
      throw new InvalidArgumentError(`restore into replica '${this.replicaId}', which is not empty`);
    }
    if (!Number.isSafeInteger(nowMs) || nowMs < 0)
      throw new InvalidArgumentError('nowMs must be a non-negative integer');
    restoreRecords(
      {
        namespace: this.namespace,
        states: this.states,
        ctx: this.ctx,
        index: this.index,
        clock: this.clock,
        tombstoneGraceMs: this.tombstoneGraceMs,
        join: (state) => {
          if (!this.ctx.seenAll(state)) this.joinState(state, nowMs);
        },
        applyDelta: (delta) => this.applyDelta(delta, nowMs, []),
        installed: (dots, tombstones) => {
          this.liveDots += dots;
          this.tombstoneCount += tombstones;
          this.localSeq = Math.max(this.localSeq, this.ctx.maxSeq(this.replicaId));
        },
      },
      deltas,
      nowMs,
    );
  }

  /** Merge without the deps rule; returns the refused states and the delta as applied. */
  private applyDelta(delta: Delta, nowMs: number, changedKeys: string[]): { rejectedStates: number; record: Delta } {
    let rejectedStates = 0;
    const accepted: KeyState[] = [];
    for (const incoming of delta.states) {
      const maxWall = maxWallOf(incoming);
      try {
        this.clock.check({ wallMs: maxWall, logical: 0, node: incoming.node }, nowMs);
      } catch {
        rejectedStates++; // counted by the clock too
        continue;
      }
      accepted.push(incoming);
      if (this.ctx.seenAll(incoming)) continue;
      if (this.joinState(incoming, nowMs)) changedKeys.push(incoming.key);
    }
    if (rejectedStates > 0) {
      // Without every state, the delta's extra context may name writes this
      // replica lacks: leave those gaps open for a later anti-entropy round.
      this.driftRejections += rejectedStates;
    } else {
      this.ctx.addAll(delta.context);
      this.localSeq = Math.max(this.localSeq, this.ctx.maxSeq(this.replicaId));
    }
    const record: Delta =
      rejectedStates > 0
        ? { namespace: this.namespace, states: accepted, context: EMPTY_RANGES }
        : { namespace: this.namespace, states: delta.states, context: delta.context };
    return { rejectedStates, record };
  }

  /** Deltas held for their causal dependencies now. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The keys of the deltas held for their deps (for a caller that reports changes). */
  pendingKeys(): Set<string> {
    return this.pending.keys();
  }

  /** The dots this replica has seen: send it to a peer, which answers with deltaFor(). */
  digest(): Digest {
    return { namespace: this.namespace, context: this.ctx.snapshot() };
  }

  /**
   * What `remote` lacks: every key state holding a dot the remote has not seen,
   * plus the missing dot ranges (so superseded and collected writes fill its gaps).
   * Cost O(missing dots · log n + origins + gaps), independent of the state size.
   */
  deltaFor(remote: Digest): Delta {
    checkDigest(remote);
    if (remote.namespace !== this.namespace) {
      throw new InvalidArgumentError(`digest of namespace '${remote.namespace}' sent to '${this.namespace}'`);
    }
    const missing = this.ctx.minus(remote.context);
    const keys = new Set<string>();
    for (const [node, ranges] of missing) {
      this.index.scan(node, ranges, (key, seq) => {
        if (holdsDot(this.states.get(key), node, seq)) keys.add(key);
      });
    }
    const states: KeyState[] = [];
    for (const key of keys) states.push(this.states.get(key) as KeyState);
    states.sort(byKey);
    return { namespace: this.namespace, states, context: missing };
  }

  /** The full state as a delta (key states sorted by key, with the whole dot context). */
  state(): Delta {
    const states = [...this.states.values()].sort(byKey);
    return { namespace: this.namespace, states, context: this.ctx.snapshot() };
  }

  /**
   * Collects tombstones and expired entries that can no longer bring data back:
   * those written at least tombstoneGraceMs ago (by then every write they
   * superseded has expired, since the grace is at least the maximum TTL), and,
   * with `peers`, those every peer has seen once this replica has seen all the
   * peers have. Their dots stay in the context, so late copies are ignored.
   */
  gc(nowMs: number, options: GcOptions = {}): GcResult {
    if (!Number.isSafeInteger(nowMs) || nowMs < 0)
      throw new InvalidArgumentError('nowMs must be a non-negative integer');
    let acked: DotContext[] | undefined;
    for (const d of options.peers ?? []) checkDigest(d);
    if (options.peers && options.peers.length > 0) {
      const mine = this.ctx.snapshot();
      const covered = options.peers.every(
        (d) =>
          d.namespace === this.namespace &&
          [...d.context].every(([node, r]) => subtractRanges(r, mine.get(node) ?? []).length === 0),
      );
      if (covered) {
        acked = options.peers.map((d) => {
          const c = new DotContext();
          c.addAll(d.context);
          return c;
        });
      }
    }
    this.collected.prune(nowMs);
    let removed = 0;
    for (const [key, state] of this.states) {
      if (nowMs < expiresAtOf(state)) continue;
      const old = collectableAt(state, nowMs, this.tombstoneGraceMs);
      const everywhere = acked?.every((c) => seenBy(c, state)) === true;
      if (old || everywhere) {
        this.collect(key, state);
        removed++;
      }
    }
    if (removed > 0) this.maybeCompactIndex();
    return { removed };
  }

  stats(): ReplicaStats {
    const { origins, ranges } = this.ctx.size();
    return {
      states: this.states.size,
      tombstones: this.tombstoneCount,
      driftRejections: this.driftRejections,
      contextOrigins: origins,
      contextRanges: ranges,
      collectedKeys: this.collected.size,
      pendingDeltas: this.pending.size,
      pendingDropped: this.pending.dropped,
    };
  }

  // ---- internals ----

  private checkKey(key: string): void {
    if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('key must be a non-empty string');
    const bytes = key.length > this.maxKeyBytes ? Number.POSITIVE_INFINITY : wellFormedUtf8Length(key);
    if (bytes > this.maxKeyBytes) {
      throw new InvalidArgumentError(`key is longer than ${this.maxKeyBytes} bytes`, { key: key.slice(0, 64) });
    }
    if (bytes < 0) throw new InvalidArgumentError('key has a lone surrogate');
  }

  /** The next local sequence number; InvalidArgumentError once MAX_SEQ is spent. */
  private nextSeq(): number {
    if (this.localSeq >= MAX_SEQ) {
      throw new InvalidArgumentError(
        `replica '${this.replicaId}' has used every sequence number; restart it under a new id`,
      );
    }
    return ++this.localSeq;
  }

  private checkTtl(ttlSeconds: number): number {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > this.maxTtlSeconds) {
      throw new InvalidArgumentError(`ttlSeconds must be an integer in 1..${this.maxTtlSeconds}, got ${ttlSeconds}`, {
        ttlSeconds,
      });
    }
    return ttlSeconds;
  }

  /** Throws NamespaceFullError when one more live key would exceed the limit. */
  private checkRoom(nowMs: number): void {
    if (this.states.size - this.tombstoneCount + this.preparedLatest.size < this.maxLiveKeys) return;
    let live = this.liveCount(nowMs);
    // Prepared writes that will make a key live count as live already.
    for (const [key, mine] of this.preparedLatest) {
      const held = this.states.get(key);
      if (nowMs < expiresAtOf(mine) && !(held !== undefined && nowMs < expiresAtOf(held))) live++;
    }
    if (live >= this.maxLiveKeys) throw new NamespaceFullError(this.namespace, this.maxLiveKeys);
  }

  private applyLocal(key: string, next: KeyState, current: KeyState | undefined, deps: Deps | undefined): Delta {
    const context = this.supersededBy(next, current);
    this.install(key, next, current);
    return this.localDelta(next, context, deps);
  }

  /**
   * The dots a local write supersedes: they travel with it, so a receiver that
   * never saw them ignores their late copies (and after GC cannot be fooled by them).
   */
  private supersededBy(next: KeyState, current: KeyState | undefined): DotRanges {
    if (!current) return EMPTY_RANGES;
    const superseded = new Map<string, number[]>();
    forEachDot(current, (node, seq) => {
      if (!holdsDot(next, node, seq)) superseded.set(node, [seq, seq]);
    });
    return superseded.size > 0 ? superseded : EMPTY_RANGES;
  }

  /** Joins one incoming key state into the held one; returns whether the held state changed. */
  private joinState(incoming: KeyState, nowMs: number): boolean {
    let current = this.states.get(incoming.key);
    if (current !== undefined && collectableAt(current, nowMs, this.tombstoneGraceMs)) {
      // Collect it now, as gc(nowMs) would: whether a replica's gc has run yet
      // must not decide what an incoming state joins (INTERNALS §4).
      this.collect(incoming.key, current);
      current = undefined;
    }
    if (current === undefined && collectableAt(incoming, nowMs, this.tombstoneGraceMs)) {
      this.collected.note(incoming.key, incoming);
      this.observe(incoming, nowMs); // collected on arrival: only its dots are kept
      return false;
    }
    const next = current === undefined ? incoming : joinKeyStates(current, incoming);
    const changed = next !== current;
    if (changed) this.install(incoming.key, next, current);
    this.observe(incoming, nowMs);
    return changed;
  }

  private observe(state: KeyState, nowMs: number): void {
    const maxWall = maxWallOf(state);
    this.clock.observe({ wallMs: maxWall, logical: maxLogicalAt(state, maxWall), node: '' }, nowMs);
    if (state.type === 'counter') {
      for (const [node, share] of state.shares) this.sawDot(node, share.seq);
    } else {
      this.sawDot(state.node, state.seq);
    }
  }

  private sawDot(node: string, seq: number): void {
    this.ctx.add(node, seq);
    if (node === this.replicaId && seq > this.localSeq) this.localSeq = seq;
  }

  private install(key: string, next: KeyState, prev: KeyState | undefined): void {
    this.states.set(key, next.type === 'register' ? Register.from(next) : next);
    if (prev !== undefined) {
      if (prev.type === 'tombstone') this.tombstoneCount--;
      this.liveDots -= prev.type === 'counter' ? prev.shares.size : 1;
    }
    if (next.type === 'tombstone') this.tombstoneCount++;
    if (next.type === 'counter') {
      for (const [node, share] of next.shares) this.addDot(key, node, share.seq, prev);
    } else {
      this.addDot(key, next.node, next.seq, prev);
    }
    this.maybeCompactIndex();
  }

  private addDot(key: string, node: string, seq: number, prev: KeyState | undefined): void {
    this.liveDots++;
    this.ctx.add(node, seq);
    if (!holdsDot(prev, node, seq)) this.index.add(node, seq, key);
  }

  /**
   * The base of a counter incarnation started on a key that is not live here:
   * the latest stamp of the state it replaces, or of a state of the key this
   * replica collected (whichever is later), else the zero stamp. Replicas that
   * start from the same state (held or collected) share the incarnation; one
   * started after a collection sits above the collected state everywhere.
   */
  private incarnationBase(key: string, current: KeyState | undefined, nowMs: number): Hlc {
    const held = current === undefined ? HLC_ZERO : latestStampOf(current);
    const floor = this.collected.baseOf(key, nowMs);
    return floor !== undefined && compareHlc(floor, held) > 0 ? floor : held;
  }

  /** Removes a collectable state, remembering its floor while a peer may still hold it. */
  private collect(key: string, state: KeyState): void {
    this.uninstall(key, state);
    this.collected.note(key, state);
  }

  private uninstall(key: string, prev: KeyState): void {
    this.states.delete(key);
    if (prev.type === 'tombstone') this.tombstoneCount--;
    this.liveDots -= prev.type === 'counter' ? prev.shares.size : 1;
  }

  /** Rebuilds the dot index when superseded dots outnumber live ones. */
  private maybeCompactIndex(): void {
    if (this.index.size > 2 * this.liveDots + 1024) this.index.rebuild(this.states);
  }
}
