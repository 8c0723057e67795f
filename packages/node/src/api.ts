/**
 * The public shape of a Parley node: what `createNode()` returns, and what
 * every door (TypeScript, HTTP, CLI, MCP, the test harness) calls. The
 * eventual side is implemented in `eventual/`, the strong side in `strong/`;
 * both are wired by `createNode` (`node.ts`).
 *
 * Times are milliseconds since the Unix epoch. Versions are opaque strings.
 * Every failure is a `ParleyError` (from `@parley/interface`) with a stable code.
 */
import type {
  CommandResult,
  Entry as CoordEntry,
  JsonValue,
  LeaseView,
  LockGrant,
  LockInfo,
  StrongChange,
} from '@parley/coord';
import type {
  EventualChange,
  EventualEntry,
  EventualSetResult,
  ListPage,
  ListQuery,
  ParleyError,
  PeerId,
  TypedEvents,
  Unsubscribe,
  WatchOptions,
  WriteOperation,
} from '@parley/interface';
import type { NodeEvents } from './context.js';
import type { QueueOptions, StrongQueue } from './queue-api.js';
import type { Session } from './session/session.js';

export type { JsonValue } from '@parley/coord';

export type { ListPage, ListQuery } from '@parley/interface';

// ---------------------------------------------------------------- eventual

export type Consistency = 'local' | 'majority';

export type { EventualEntry } from '@parley/interface';

export interface EventualWriteOptions {
  /** Seconds, 1 .. 30 days; default 3600. */
  ttl?: number;
  /** 'local' (default): durable on this node. 'majority': also acknowledged by a majority of known replicas. */
  consistency?: Consistency;
  /** For 'majority': how long to wait for acknowledgements (default 5000 ms); the local write stays applied. */
  timeoutMs?: number;
  /**
   * For 'majority': how many replicas the namespace has, this node included (1..1024).
   * The majority is then of this count, or of the replicas known, whichever is larger.
   * Without it, of the replicas known and never of this node alone.
   */
  replicas?: number;
  /**
   * Read-your-writes, monotonic reads and writes, and writes-follow-reads across calls
   * and nodes (docs/guarantees.md, "Sessions"): the call waits, at most `timeoutMs`, until
   * this node has seen what the session covers, else fails with `session_behind` and does
   * nothing; on success the session moves forward to what the call wrote or saw.
   */
  session?: Session;
}

export interface EventualReadOptions {
  consistency?: Consistency;
  timeoutMs?: number;
  /** For 'majority': as EventualWriteOptions.replicas. */
  replicas?: number;
  /**
   * Read-your-writes, monotonic reads and writes, and writes-follow-reads across calls
   * and nodes (docs/guarantees.md, "Sessions"): the call waits, at most `timeoutMs`, until
   * this node has seen what the session covers, else fails with `session_behind` and does
   * nothing; on success the session moves forward to what the call wrote or saw.
   */
  session?: Session;
}

export type { EventualChange, EventualSetResult, WatchOptions, WriteOperation } from '@parley/interface';

export interface EventualNamespace {
  readonly name: string;
  set(key: string, value: JsonValue, options?: EventualWriteOptions): Promise<EventualSetResult>;
  get(key: string, options?: EventualReadOptions): Promise<EventualEntry | undefined>;
  /**
   * The local entry of `key`, synchronously (what `get(key)` with local
   * consistency resolves to), frozen: the same object for every read of an
   * unchanged key. Throws `unavailable` while the namespace is still opening
   * (the first `await get(…)` waits for it), `closed` after close.
   */
  peek(key: string): Readonly<EventualEntry> | undefined;
  /** Resolves true if a live entry was deleted. */
  delete(key: string, options?: EventualWriteOptions): Promise<boolean>;
  increment(key: string, by?: number, options?: EventualWriteOptions): Promise<EventualEntry>;
  list(query?: ListQuery): Promise<ListPage<EventualEntry>>;
  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe;
  changes(options?: WatchOptions): AsyncIterable<EventualChange>;
  /** A Y.Doc replicated as one entry with Yjs's own update protocol. */
  yjs(key: string): Promise<import('yjs').Doc>;
  /** An Automerge document handle replicated with Automerge's sync protocol. */
  automerge<T = Record<string, unknown>>(key: string): Promise<AutomergeHandle<T>>;
  /** Best-effort messages among the nodes that have `channel` of this namespace open (never persisted). */
  ephemeral(channel: string): EphemeralChannel;
}

/**
 * Gossip among the nodes that subscribe to one channel of a namespace: best effort,
 * never persisted or repaired (a node that is apart misses what was sent meanwhile),
 * at most 256 KiB a message. Yjs awareness between the nodes of a room rides on it.
 */
export interface EphemeralChannel {
  readonly name: string;
  /** Hands `message` to the transport for every other subscribed node. */
  publish(message: Uint8Array): Promise<void>;
  /** Messages from other nodes (never this node's own). */
  subscribe(handler: (from: PeerId, message: Uint8Array) => void): Unsubscribe;
}

export interface AutomergeHandle<T> {
  /** The current document (an Automerge immutable doc). */
  doc(): import('@automerge/automerge').Doc<T>;
  /** Applies a local change, persists it and spreads it. */
  change(fn: (d: T) => void): Promise<void>;
  /** Called after every local or remote change. */
  onChange(callback: (doc: import('@automerge/automerge').Doc<T>) => void): Unsubscribe;
}

// ---------------------------------------------------------------- strong

/** A strong entry: coord's entry (kind 'value' | 'claim' | 'lease'). */
export type StrongEntry = CoordEntry;

/** A lock grant usable as a fence on strong writes. */
export interface FenceToken {
  namespace: string;
  key: string;
  fence: number;
}

export interface StrongWriteOptions {
  /** Seconds; default 3600, at most 30 days. */
  ttl?: number;
  ifVersion?: string;
  ifNotExists?: boolean;
  /** Rejected with `fence_stale` once a newer holder of that lock exists. */
  fence?: FenceToken;
  /** Abort the call (`timeout`) after this long; default 10,000 ms. */
  timeoutMs?: number;
  /**
   * Read-your-writes, monotonic reads and writes, and writes-follow-reads across calls
   * and nodes (docs/guarantees.md, "Sessions"): the call waits, at most `timeoutMs`, until
   * this node has seen what the session covers, else fails with `session_behind` and does
   * nothing; on success the session moves forward to what the call wrote or saw.
   */
  session?: Session;
}

/**
 * How fresh a strong read must be (docs/guarantees.md, "Strong reads"); the
 * default is linearizable. `'serializable'`: the member asked answers from its
 * applied state without contacting the leader (a prefix of the log, possibly
 * stale). Bounds (`consistency: 'bounded'`, implied by either bound): the
 * member answers from its applied state only while it can prove the answer
 * holds every write acknowledged `maxStalenessMs` before the call, missing at
 * most `maxLagEntries` of the log's entries committed by then; else it fails
 * with `staleness_exceeded` (retryable).
 */
export interface StrongReadOptions {
  consistency?: 'linearizable' | 'serializable' | 'bounded';
  maxStalenessMs?: number;
  maxLagEntries?: number;
  /** Abort the call (`timeout`) after this long; default 10,000 ms. */
  timeoutMs?: number;
  /**
   * Read-your-writes, monotonic reads and writes, and writes-follow-reads across calls
   * and nodes (docs/guarantees.md, "Sessions"): the call waits, at most `timeoutMs`, until
   * this node has seen what the session covers, else fails with `session_behind` and does
   * nothing; on success the session moves forward to what the call wrote or saw.
   */
  session?: Session;
}

/** `strong(ns).list`: the query and how fresh the page must be. */
export type StrongListQuery = ListQuery & StrongReadOptions;

/**
 * What `strong(ns).set` answers: the entry as written, with `operation` — the shape of
 * `eventual(ns).set` and of the HTTP API's answer, so `(await ns.set(k, v)).version` works on both.
 */
export type StrongSetResult = StrongEntry & {
  operation: WriteOperation;
  /**
   * @deprecated The result is the entry itself: read its fields directly. This alias of the entry
   * (without `operation`) is kept for code written against the old `{ entry, operation }` shape; it is
   * not enumerable, so JSON, spreads and equality checks see only the entry's fields.
   */
  readonly entry: StrongEntry;
};

export interface ClaimResult {
  won: boolean;
  value: JsonValue;
  version: string;
  entry: StrongEntry;
}

/** A change of a strong entry, numbered by the backend's revision (Raft log index, or etcd revision). */
export type { StrongChange } from '@parley/coord';

export interface Lease {
  readonly namespace: string;
  readonly key: string;
  readonly holder: string;
  readonly epoch: number;
  readonly view: LeaseView;
  renew(ttl?: number): Promise<LeaseView>;
  updateState(state: JsonValue, options?: { ifVersion?: string }): Promise<LeaseView>;
  release(state?: JsonValue): Promise<void>;
}

export interface StrongNamespace {
  readonly name: string;
  set(key: string, value: JsonValue, options?: StrongWriteOptions): Promise<StrongSetResult>;
  get(key: string, options?: StrongReadOptions): Promise<StrongEntry | undefined>;
  delete(key: string, options?: { ifVersion?: string; fence?: FenceToken; session?: Session }): Promise<boolean>;
  list(query?: StrongListQuery): Promise<ListPage<StrongEntry>>;
  deleteNamespace(options: {
    confirm: boolean;
    pattern?: string;
  }): Promise<{ deleted_count: number; namespace: string; pattern_used: string }>;
  claim(key: string, value: JsonValue, options?: { ttl?: number; session?: Session }): Promise<ClaimResult>;
  /** With `session`, the acquire and every later call of the lease (renew, updateState, release) observe into it. */
  lease(key: string, options: { ttl: number; holder: string; state?: JsonValue; session?: Session }): Promise<Lease>;
  attach(key: string, holder: string, options?: { session?: Session }): Promise<Lease | undefined>;
  /** A JSON document at `key`, changed by read, apply, compare-and-swap (retried on conflict). */
  doc<T extends JsonValue>(key: string): StrongDoc<T>;
  watch(options: StrongWatchOptions, callback: (change: StrongChange) => void): Unsubscribe;
  /** A fenced work queue kept in this namespace (docs/queue.md). */
  queue(name: string, options?: QueueOptions): StrongQueue;
}

/** `strong(ns).doc(key)`. */
export interface StrongDoc<T extends JsonValue> {
  /**
   * Reads the document, applies `fn`, and writes the result if nobody wrote meanwhile
   * (`ifVersion`, or `ifNotExists` with `create` when absent); retried on a conflict (10 attempts).
   * Resolves to the entry written. With `session`, every read and write of the loop is the session's.
   */
  update(fn: (current: T) => T, options?: { create?: T; ttl?: number; session?: Session }): Promise<StrongEntry>;
}

/** Options of `strong(ns).watch`: which changes, where to resume, and how the watch says it ended. */
export interface StrongWatchOptions extends WatchOptions {
  /** Replay every kept change after this revision first (throws `compacted` when they are no longer kept). */
  fromRevision?: number;
  /**
   * Called once if the watch ends on its own, after which nothing more is
   * delivered: `compacted` when the changes after the last one delivered are
   * no longer kept anywhere it can ask (watch again, then list, to re-read).
   * Without it the node logs a warning. A watch never skips changes silently.
   */
  onError?: (err: ParleyError) => void;
}

export interface LockAcquireOptions {
  owner: string;
  /** Seconds; default 60, at most 3600. */
  ttl?: number;
  /** Seconds to wait in the FIFO queue for a held lock; 0 (default) fails at once with `lock_held`. */
  wait?: number;
  /** JSON, at most 16 KB. */
  metadata?: JsonValue;
}

/** Options of `locks(ns).release`: the grant to release, and whether the next acquire may overtake the wait for it. */
export interface LockReleaseOptions {
  owner: string;
  fence: number;
  /**
   * Pipelined: the caller may acquire the same lock again (same owner,
   * through this node) without awaiting this release. The node sends that
   * acquire right behind the release, so both usually share one log round;
   * an acquire that reaches the leader first anyway is sent again once the
   * release has settled, never answered with the old grant. The returned
   * promise still settles with the release's outcome; a failure nobody
   * awaits is logged as a warning. Default false.
   */
  pipelined?: boolean;
}

export interface Locks {
  readonly name: string;
  acquire(key: string, options: LockAcquireOptions): Promise<LockGrant>;
  renew(key: string, options: { owner: string; fence: number; ttl?: number }): Promise<LockGrant>;
  release(key: string, options: LockReleaseOptions): Promise<boolean>;
  inspect(key: string): Promise<LockInfo>;
}

export interface PeerLag {
  peer: PeerId;
  match: number;
  /** Leader's last index minus match. */
  lag: number;
}

export interface ClusterStatus {
  self: PeerId;
  leader: PeerId | null;
  term: number;
  voters: PeerId[];
  learners: PeerId[];
  commitIndex: number;
  appliedIndex: number;
  /** Leader only. */
  peers: PeerLag[];
}

export interface Cluster {
  status(): Promise<ClusterStatus>;
  addVoter(peer: PeerId, addrs?: string[]): Promise<void>;
  addLearner(peer: PeerId, addrs?: string[]): Promise<void>;
  promote(peer: PeerId): Promise<void>;
  removeVoter(peer: PeerId): Promise<void>;
  transferLeadership(to: PeerId): Promise<void>;
}

// ---------------------------------------------------------------- node

export interface NamespaceStatus {
  name: string;
  kind: 'eventual' | 'strong';
  keys: number;
  bytes: number;
  /** Last completed anti-entropy round (eventual), or null. */
  lastAntiEntropyAt: number | null;
}

export interface NodeStatus {
  peerId: PeerId;
  replicaId: string;
  dataDir: string | null;
  listen: string[];
  peers: PeerId[];
  namespaces: NamespaceStatus[];
  /** Faults of this node's own disk (empty while healthy): see `health()`. */
  faults: StorageFault[];
}

/**
 * A store of this node's disk that failed a write and refuses writes until the
 * node restarts: `kv` (eventual namespaces) or `raft` (the Raft log; the member
 * then left the strong group's service).
 */
export interface StorageFault {
  store: 'kv' | 'raft';
  /** `storage_full`, `storage_unwritable`, `storage_failed`, `storage_corrupt`, or another code of the error. */
  code: string;
  message: string;
}

/** What readiness needs, in O(1): see `ParleyNode.health()`. */
export interface NodeHealth {
  /** Faults of this node's own disk, by store; empty while healthy. */
  faults: StorageFault[];
}

export interface ParleyNode {
  readonly peerId: PeerId;
  /** Multiaddrs this node listens on (empty for an injected transport). */
  readonly addresses: string[];
  eventual(namespace: string): EventualNamespace;
  strong(namespace: string): StrongNamespace;
  locks(namespace: string): Locks;
  readonly cluster: Cluster;
  /** Observability hooks of both modules (the HTTP server exports them as Prometheus series). */
  readonly events: TypedEvents<NodeEvents>;
  /**
   * This node's status: peers, namespaces with their keys and bytes, faults. Async (it reads
   * the stores' usage): `await node.status()`. Times are epoch milliseconds here; the HTTP API
   * (`/api/v1/status`) answers them as ISO strings.
   */
  status(): Promise<NodeStatus>;
  /** Cheap health (O(1), no I/O): the faults of this node's own disk. Readiness reads it. */
  health(): NodeHealth;
  /** Flushes, persists and stops within a bound. Idempotent. */
  close(): Promise<void>;
}

/** Re-exported for doors that map results (HTTP, MCP). */
export type { CommandResult, LeaseView, LockGrant, LockInfo };
