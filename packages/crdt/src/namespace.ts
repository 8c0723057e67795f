import { InvalidArgumentError, NamespaceFullError, ValueTooLargeError } from '@parley/interface';
import { DotContext, subtractRanges } from './context.js';
import { HLC_ZERO, type Hlc, HybridLogicalClock, hlcVersion } from './hlc.js';
import { isWellFormed, normalizeJson, utf8Length, wellFormedUtf8Length } from './json.js';
import { MAX_SEQ, MAX_TTL_SECONDS } from './limits.js';
import { addToShare } from './pn-counter.js';
import { Register } from './register.js';
import type {
  CounterShare,
  CounterState,
  Delta,
  Digest,
  DotRanges,
  Entry,
  GcResult,
  JsonValue,
  KeyState,
  MergeResult,
  RegisterState,
  ReplicaStats,
  SetOptions,
  TombstoneState,
} from './types.js';
import { checkDelta, checkDigest } from './validate.js';

export { MAX_TTL_SECONDS } from './limits.js';
export const DEFAULT_TTL_SECONDS = 3600;
export const DEFAULT_MAX_VALUE_BYTES = 1_048_576;
export const DEFAULT_MAX_LIVE_KEYS = 10_000;
export const DEFAULT_MAX_KEY_BYTES = 1024;

export interface NamespaceReplicaOptions {
  namespace: string;
  /** Unique per replica, and never reused by a replica that lost its state. */
  replicaId: string;
  /** Largest value, as UTF-8 JSON bytes. Default 1,048,576. */
  maxValueBytes?: number;
  /** Live (unexpired, undeleted) keys a local write may reach. Default 10,000. */
  maxLiveKeys?: number;
  /** Longest key in UTF-8 bytes. Default 1024. */
  maxKeyBytes?: number;
  /** Remote stamps further ahead of the local physical clock than this are refused. Default 60,000. */
  maxClockDriftMs?: number;
  /** TTL of a write that names none. Default 3600. */
  defaultTtlSeconds?: number;
  /**
   * Largest TTL a write may ask for, 1 .. 30 days. Default 30 days. Every replica
   * of a namespace must use the same value: `merge` refuses a delta holding a
   * longer TTL (InvalidArgumentError), since the garbage collection argument
   * needs every write to expire within the local maximum.
   */
  maxTtlSeconds?: number;
  /**
   * A tombstone or expired entry is collected once this long has passed since its
   * write. At least maxTtlSeconds·1000 (the no-resurrection guarantee needs every
   * write a tombstone supersedes to have expired first; a smaller value is an
   * InvalidArgumentError). Default maxTtlSeconds·1000.
   */
  tombstoneGraceMs?: number;
}

export interface GcOptions {
  /**
   * Digests acknowledged by every other replica of the namespace (from anti-entropy).
   * When given, and this replica has seen everything each of them has, tombstones
   * and expired entries that all of them have seen are collected before the grace period.
   */
  peers?: readonly Digest[];
}

const EMPTY_RANGES: DotRanges = new Map();

/** Stamp order of two key states by their (wallMs, logical, node) identity. */
function compareBorn(a: KeyState, b: KeyState): number {
  if (a.wallMs !== b.wallMs) return a.wallMs < b.wallMs ? -1 : 1;
  if (a.logical !== b.logical) return a.logical < b.logical ? -1 : 1;
  if (a.node === b.node) return 0;
  return a.node < b.node ? -1 : 1;
}

const TYPE_RANK = { register: 0, tombstone: 1, counter: 2 } as const;

/** Later of two shares of the same node: by stamp, then seq, then ttl (total, so the join is too). */
function laterShare(a: CounterShare, b: CounterShare): CounterShare {
  if (a.wallMs !== b.wallMs) return a.wallMs > b.wallMs ? a : b;
  if (a.logical !== b.logical) return a.logical > b.logical ? a : b;
  if (a.seq !== b.seq) return a.seq > b.seq ? a : b;
  return a.ttlSeconds >= b.ttlSeconds ? a : b;
}

function joinShares(a: CounterShare, b: CounterShare): CounterShare {
  const last = laterShare(a, b);
  const inc = Math.max(a.inc, b.inc);
  const dec = Math.max(a.dec, b.dec);
  if (inc === last.inc && dec === last.dec) return last;
  return { inc, dec, wallMs: last.wallMs, logical: last.logical, seq: last.seq, ttlSeconds: last.ttlSeconds };
}

function sameShare(a: CounterShare, b: CounterShare): boolean {
  return (
    a.inc === b.inc &&
    a.dec === b.dec &&
    a.wallMs === b.wallMs &&
    a.logical === b.logical &&
    a.seq === b.seq &&
    a.ttlSeconds === b.ttlSeconds
  );
}

/** Join of two incarnations with the same birth stamp: shares join per node. Returns `a` when b adds nothing. */
function joinCounters(a: CounterState, b: CounterState): CounterState {
  let shares: Map<string, CounterShare> | undefined;
  for (const [node, theirs] of b.shares) {
    const mine = a.shares.get(node);
    const joined = mine ? joinShares(mine, theirs) : theirs;
    if (mine && sameShare(mine, joined)) continue;
    shares ??= new Map(a.shares);
    shares.set(node, joined);
  }
  const createdAt = Math.min(a.createdAt, b.createdAt);
  if (!shares && createdAt === a.createdAt) return a;
  return {
    type: 'counter',
    key: a.key,
    wallMs: a.wallMs,
    logical: a.logical,
    node: a.node,
    createdAt,
    shares: shares ? sortShares(shares) : a.shares,
  };
}

function sortShares(shares: Map<string, CounterShare>): Map<string, CounterShare> {
  if (shares.size < 2) return shares;
  return new Map([...shares].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)));
}

/** Deterministic order for two registers with the same stamp (only a faulty peer makes them). */
function compareRegisterPayload(a: RegisterState, b: RegisterState): number {
  if (a.seq !== b.seq) return a.seq - b.seq;
  if (a.ttlSeconds !== b.ttlSeconds) return a.ttlSeconds - b.ttlSeconds;
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  const ta = JSON.stringify(a.value);
  const tb = JSON.stringify(b.value);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/**
 * The join of two states of one key: the greater birth stamp wins (LWW); two
 * incarnations of one counter join their shares. Ties on the stamp, which only
 * a faulty peer produces, break deterministically. Returns `a` when it already
 * dominates `b`.
 */
export function joinKeyStates(a: KeyState, b: KeyState): KeyState {
  const c = compareBorn(a, b);
  if (c > 0) return a;
  if (c < 0) return b;
  if (a.type === 'counter' && b.type === 'counter') return joinCounters(a, b);
  // A counter sits just after the state its base names, so it wins that tie.
  if (a.type !== b.type) return TYPE_RANK[a.type] > TYPE_RANK[b.type] ? a : b;
  if (a.type === 'tombstone') return (a as TombstoneState).seq >= (b as TombstoneState).seq ? a : b;
  return compareRegisterPayload(a as RegisterState, b as RegisterState) >= 0 ? a : b;
}

/** Calls fn for every dot (node, seq) a key state carries. */
export function forEachDot(state: KeyState, fn: (node: string, seq: number) => void): void {
  if (state.type === 'counter') {
    for (const [node, share] of state.shares) fn(node, share.seq);
  } else {
    fn(state.node, state.seq);
  }
}

function holdsDot(state: KeyState | undefined, node: string, seq: number): boolean {
  if (!state) return false;
  if (state.type === 'counter') return state.shares.get(node)?.seq === seq;
  return state.node === node && state.seq === seq;
}

/** The share with the latest stamp (it sets the counter's TTL, version and updatedAt). */
function latestShare(state: CounterState): [string, CounterShare] {
  let bestNode = '';
  let best: CounterShare | undefined;
  for (const [node, share] of state.shares) {
    if (
      !best ||
      share.wallMs > best.wallMs ||
      (share.wallMs === best.wallMs &&
        (share.logical > best.logical || (share.logical === best.logical && node > bestNode)))
    ) {
      best = share;
      bestNode = node;
    }
  }
  return [bestNode, best as CounterShare];
}

/** When a key state reads as absent: tombstones always (−∞), entries at updatedAt + ttl. */
export function expiresAtOf(state: KeyState): number {
  switch (state.type) {
    case 'tombstone':
      return Number.NEGATIVE_INFINITY;
    case 'register':
      return state.wallMs + state.ttlSeconds * 1000;
    case 'counter': {
      if (state.shares.size === 0) return Number.NEGATIVE_INFINITY;
      const [, s] = latestShare(state);
      return s.wallMs + s.ttlSeconds * 1000;
    }
  }
}

/** The entry a reader sees for a register or counter state (ignoring expiry). */
export function entryOf(state: RegisterState | CounterState): Entry {
  if (state.type === 'register') return Register.from(state);
  const [node, last] = latestShare(state);
  let total = 0;
  for (const s of state.shares.values()) total += s.inc - s.dec;
  return {
    value: total,
    version: hlcVersion({ wallMs: last.wallMs, logical: last.logical, node }),
    ttlSeconds: last.ttlSeconds,
    createdAt: state.createdAt,
    updatedAt: last.wallMs,
    expiresAt: last.wallMs + last.ttlSeconds * 1000,
  };
}

/** Canonical order of key states in deltas and encodings: by key. */
function byKey(a: KeyState, b: KeyState): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

function positiveInt(name: string, v: number | undefined, dflt: number): number {
  const x = v ?? dflt;
  if (!Number.isSafeInteger(x) || x < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  return x;
}

/** Per-origin index from dot to key, for O(difference) anti-entropy. */
interface OriginIndex {
  /** Sorted by seq. */
  seqs: number[];
  keys: string[];
  /** Appended out of order; merged into seqs/keys before a scan. */
  tailSeqs: number[];
  tailKeys: string[];
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
  private readonly index = new Map<string, OriginIndex>();
  private indexSize = 0;
  private liveDots = 0;
  private localSeq = 0;
  private tombstoneCount = 0;
  private driftRejections = 0;

  constructor(options: NamespaceReplicaOptions) {
    if (typeof options.namespace !== 'string' || !isWellFormed(options.namespace)) {
      throw new InvalidArgumentError('namespace must be a well-formed string');
    }
    if (typeof options.replicaId !== 'string' || options.replicaId.length === 0 || !isWellFormed(options.replicaId)) {
      throw new InvalidArgumentError('replicaId must be a non-empty well-formed string');
    }
    if (utf8Length(options.replicaId) > 255) throw new InvalidArgumentError('replicaId is longer than 255 bytes');
    this.namespace = options.namespace;
    this.replicaId = options.replicaId;
    this.clock = new HybridLogicalClock(options.replicaId, { maxClockDriftMs: options.maxClockDriftMs });
    this.maxValueBytes = positiveInt('maxValueBytes', options.maxValueBytes, DEFAULT_MAX_VALUE_BYTES);
    this.maxLiveKeys = positiveInt('maxLiveKeys', options.maxLiveKeys, DEFAULT_MAX_LIVE_KEYS);
    this.maxKeyBytes = positiveInt('maxKeyBytes', options.maxKeyBytes, DEFAULT_MAX_KEY_BYTES);
    this.maxTtlSeconds = positiveInt('maxTtlSeconds', options.maxTtlSeconds, MAX_TTL_SECONDS);
    this.defaultTtlSeconds = positiveInt('defaultTtlSeconds', options.defaultTtlSeconds, DEFAULT_TTL_SECONDS);
    this.tombstoneGraceMs = positiveInt('tombstoneGraceMs', options.tombstoneGraceMs, this.maxTtlSeconds * 1000);
    if (this.maxTtlSeconds < 1 || this.maxTtlSeconds > MAX_TTL_SECONDS) {
      throw new InvalidArgumentError(`maxTtlSeconds must be in 1..${MAX_TTL_SECONDS}`);
    }
    if (this.tombstoneGraceMs < this.maxTtlSeconds * 1000) {
      throw new InvalidArgumentError(
        `tombstoneGraceMs (${this.tombstoneGraceMs}) must be at least maxTtlSeconds·1000 (${this.maxTtlSeconds * 1000}): a shorter grace lets a collected tombstone's superseded write come back`,
      );
    }
    this.checkTtl(this.defaultTtlSeconds);
  }

  // ---- local operations ----

  /** Writes an LWW register. Returns the delta to gossip. */
  set(key: string, value: JsonValue, nowMs: number, options: SetOptions = {}): Delta {
    this.checkKey(key);
    const ttlSeconds = this.checkTtl(options.ttlSeconds ?? this.defaultTtlSeconds);
    const json = normalizeJson(value);
    if (json.text.length * 3 > this.maxValueBytes) {
      const size = utf8Length(json.text);
      if (size > this.maxValueBytes) throw new ValueTooLargeError(size, this.maxValueBytes);
    }
    const current = this.states.get(key);
    const live = current !== undefined && nowMs < expiresAtOf(current);
    if (!live) this.checkRoom(nowMs);
    const stamp = this.clock.now(nowMs);
    const createdAt = live && current.type !== 'tombstone' ? current.createdAt : stamp.wallMs;
    const next = new Register(
      key,
      stamp.wallMs,
      stamp.logical,
      stamp.node,
      this.nextSeq(),
      ttlSeconds,
      createdAt,
      json.value,
    );
    return this.applyLocal(key, next, current, next);
  }

  /**
   * Adds `by` (a safe integer; negative decrements) to a PN-counter and renews
   * its TTL. On an absent, expired or deleted key it starts a new counter at `by`.
   * Incrementing a live register is an InvalidArgumentError.
   */
  increment(key: string, by: number, nowMs: number, options: SetOptions = {}): Delta {
    this.checkKey(key);
    const ttlSeconds = this.checkTtl(options.ttlSeconds ?? this.defaultTtlSeconds);
    if (!Number.isSafeInteger(by)) throw new InvalidArgumentError(`increment must be a safe integer, got ${by}`);
    const current = this.states.get(key);
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
    const own = new Map([[this.replicaId, share]]);
    if (live && current.type === 'counter') {
      const shares = new Map(current.shares);
      shares.set(this.replicaId, share);
      const next: CounterState = { ...current, shares: sortShares(shares) };
      const delta: CounterState = { ...current, shares: own };
      return this.applyLocal(key, next, current, delta);
    }
    const base = current === undefined ? HLC_ZERO : latestStampOf(current);
    const next: CounterState = {
      type: 'counter',
      key,
      wallMs: base.wallMs,
      logical: base.logical,
      node: base.node,
      createdAt: stamp.wallMs,
      shares: own,
    };
    return this.applyLocal(key, next, current, next);
  }

  /** Deletes a key with a tombstone (even when it is absent here: it may live elsewhere). */
  delete(key: string, nowMs: number): Delta {
    this.checkKey(key);
    const current = this.states.get(key);
    const stamp = this.clock.now(nowMs);
    const next: TombstoneState = {
      type: 'tombstone',
      key,
      wallMs: stamp.wallMs,
      logical: stamp.logical,
      node: stamp.node,
      seq: this.nextSeq(),
    };
    return this.applyLocal(key, next, current, next);
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
   */
  merge(delta: Delta, nowMs: number): MergeResult {
    checkDelta(delta, this);
    if (delta.namespace !== this.namespace) {
      throw new InvalidArgumentError(`delta of namespace '${delta.namespace}' merged into '${this.namespace}'`);
    }
    if (!Number.isSafeInteger(nowMs) || nowMs < 0)
      throw new InvalidArgumentError('nowMs must be a non-negative integer');
    const changedKeys: string[] = [];
    let rejectedStates = 0;
    for (const incoming of delta.states) {
      const maxWall = maxWallOf(incoming);
      try {
        this.clock.check({ wallMs: maxWall, logical: 0, node: incoming.node }, nowMs);
      } catch {
        rejectedStates++; // counted by the clock too
        continue;
      }
      if (this.seenAll(incoming)) continue;
      const current = this.states.get(incoming.key);
      const next = current === undefined ? incoming : joinKeyStates(current, incoming);
      if (next !== current) {
        this.install(incoming.key, next, current);
        changedKeys.push(incoming.key);
      }
      this.observe(incoming, nowMs);
    }
    if (rejectedStates > 0) {
      // Without every state, the delta's extra context may name writes this
      // replica lacks: leave those gaps open for a later anti-entropy round.
      this.driftRejections += rejectedStates;
    } else {
      this.ctx.addAll(delta.context);
      this.localSeq = Math.max(this.localSeq, this.ctx.maxSeq(this.replicaId));
    }
    return { changedKeys, rejectedStates };
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
      const idx = this.index.get(node);
      if (!idx) continue;
      settle(idx);
      const { seqs } = idx;
      for (let r = 0; r < ranges.length; r += 2) {
        const lo = ranges[r] as number;
        const hi = ranges[r + 1] as number;
        for (let i = lowerBound(seqs, lo); i < seqs.length && (seqs[i] as number) <= hi; i++) {
          const key = idx.keys[i] as string;
          if (holdsDot(this.states.get(key), node, seqs[i] as number)) keys.add(key);
        }
      }
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
    let removed = 0;
    for (const [key, state] of this.states) {
      if (nowMs < expiresAtOf(state)) continue;
      const old = maxWallOf(state) + this.tombstoneGraceMs <= nowMs;
      const everywhere = acked?.every((c) => seenBy(c, state)) === true;
      if (old || everywhere) {
        this.uninstall(key, state);
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
    if (this.states.size - this.tombstoneCount < this.maxLiveKeys) return;
    if (this.liveCount(nowMs) >= this.maxLiveKeys) throw new NamespaceFullError(this.namespace, this.maxLiveKeys);
  }

  private applyLocal(key: string, next: KeyState, current: KeyState | undefined, sent: KeyState): Delta {
    let context: DotRanges = EMPTY_RANGES;
    if (current) {
      // The dots this write supersedes travel with it, so a receiver that never
      // saw them ignores their late copies (and after GC cannot be fooled by them).
      const superseded = new Map<string, number[]>();
      forEachDot(current, (node, seq) => {
        if (!holdsDot(next, node, seq)) superseded.set(node, [seq, seq]);
      });
      if (superseded.size > 0) context = superseded;
    }
    this.install(key, next, current);
    return { namespace: this.namespace, states: [sent], context };
  }

  private seenAll(state: KeyState): boolean {
    if (state.type === 'counter') {
      for (const [node, share] of state.shares) if (!this.ctx.has(node, share.seq)) return false;
      return true;
    }
    return this.ctx.has(state.node, state.seq);
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
    if (this.indexSize > 2 * this.liveDots + 1024) this.rebuildIndex();
  }

  private addDot(key: string, node: string, seq: number, prev: KeyState | undefined): void {
    this.liveDots++;
    this.ctx.add(node, seq);
    if (!holdsDot(prev, node, seq)) this.indexDot(node, seq, key);
  }

  private uninstall(key: string, prev: KeyState): void {
    this.states.delete(key);
    if (prev.type === 'tombstone') this.tombstoneCount--;
    this.liveDots -= prev.type === 'counter' ? prev.shares.size : 1;
  }

  private indexDot(node: string, seq: number, key: string): void {
    let idx = this.index.get(node);
    if (!idx) {
      idx = { seqs: [], keys: [], tailSeqs: [], tailKeys: [] };
      this.index.set(node, idx);
    }
    const last = idx.seqs.length > 0 ? (idx.seqs[idx.seqs.length - 1] as number) : 0;
    if (idx.tailSeqs.length === 0 && seq > last) {
      idx.seqs.push(seq);
      idx.keys.push(key);
    } else {
      idx.tailSeqs.push(seq);
      idx.tailKeys.push(key);
      // Keep the unsorted tail small relative to the sorted part.
      if (idx.tailSeqs.length > 1024 && idx.tailSeqs.length * 8 > idx.seqs.length) settle(idx);
    }
    this.indexSize++;
  }

  /** Rebuilds the dot index when superseded dots outnumber live ones. */
  private maybeCompactIndex(): void {
    if (this.indexSize > 2 * this.liveDots + 1024) this.rebuildIndex();
  }

  private rebuildIndex(): void {
    this.index.clear();
    this.indexSize = 0;
    const all: Array<[string, number, string]> = [];
    for (const [key, state] of this.states) forEachDot(state, (node, seq) => all.push([node, seq, key]));
    all.sort((a, b) => a[1] - b[1]);
    for (const [node, seq, key] of all) this.indexDot(node, seq, key);
  }
}

/** The stamp of the latest write a key state holds. */
function latestStampOf(state: KeyState): Hlc {
  if (state.type !== 'counter') return state;
  const [node, s] = latestShare(state);
  return { wallMs: s.wallMs, logical: s.logical, node };
}

function seenBy(ctx: DotContext, state: KeyState): boolean {
  let all = true;
  forEachDot(state, (node, seq) => {
    if (!ctx.has(node, seq)) all = false;
  });
  return all;
}

function maxWallOf(state: KeyState): number {
  let w = state.wallMs;
  if (state.type === 'counter') for (const s of state.shares.values()) if (s.wallMs > w) w = s.wallMs;
  return w;
}

function maxLogicalAt(state: KeyState, wallMs: number): number {
  let l = state.wallMs === wallMs ? state.logical : 0;
  if (state.type === 'counter') {
    for (const s of state.shares.values()) if (s.wallMs === wallMs && s.logical > l) l = s.logical;
  }
  return l;
}

function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((a[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Merges an index's unsorted tail into its sorted part. */
function settle(idx: OriginIndex): void {
  if (idx.tailSeqs.length === 0) return;
  const order = idx.tailSeqs.map((_, i) => i).sort((a, b) => (idx.tailSeqs[a] as number) - (idx.tailSeqs[b] as number));
  const seqs: number[] = [];
  const keys: string[] = [];
  let i = 0;
  let j = 0;
  while (i < idx.seqs.length || j < order.length) {
    const t = order[j];
    if (t === undefined || (i < idx.seqs.length && (idx.seqs[i] as number) <= (idx.tailSeqs[t] as number))) {
      seqs.push(idx.seqs[i] as number);
      keys.push(idx.keys[i] as string);
      i++;
    } else {
      seqs.push(idx.tailSeqs[t] as number);
      keys.push(idx.tailKeys[t] as string);
      j++;
    }
  }
  idx.seqs = seqs;
  idx.keys = keys;
  idx.tailSeqs = [];
  idx.tailKeys = [];
}
