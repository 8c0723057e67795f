/**
 * Data shapes of @parley/crdt. Key states and deltas are immutable once made:
 * a replica never mutates an object it has handed out or received.
 */

import type { JsonValue } from '@parley/interface';

/** A JSON value (defined once, in @parley/interface): what an eventual register holds. */
export type { JsonValue };

/** What a reader sees for a live key (the entry envelope of the brief). */
export interface Entry {
  /** The register's value, or the counter's total. Treat it as read-only. */
  readonly value: JsonValue;
  /** Opaque; fresh on every write (set, increment, renewal). */
  readonly version: string;
  readonly ttlSeconds: number;
  /** Physical ms of the write that created the key (kept across overwrites of a live key). */
  readonly createdAt: number;
  /** Physical ms of the latest write. */
  readonly updatedAt: number;
  /** The entry reads as absent from this instant on (updatedAt + ttlSeconds·1000). */
  readonly expiresAt: number;
}

/**
 * A last-writer-wins register write. Its stamp is (wallMs, logical, node); its
 * dot, the anti-entropy identity of the write, is (node, seq).
 */
export interface RegisterState {
  readonly type: 'register';
  readonly key: string;
  readonly wallMs: number;
  readonly logical: number;
  readonly node: string;
  readonly seq: number;
  readonly ttlSeconds: number;
  readonly createdAt: number;
  readonly value: JsonValue;
}

/** A delete. Same stamp and dot fields as a register, no value. */
export interface TombstoneState {
  readonly type: 'tombstone';
  readonly key: string;
  readonly wallMs: number;
  readonly logical: number;
  readonly node: string;
  readonly seq: number;
}

/** One node's share of a PN-counter incarnation; dot (node, seq) of its latest increment. */
export interface CounterShare {
  /** Sum of this node's positive increments (≥ 0). */
  readonly inc: number;
  /** Sum of this node's decrements as a positive number (≥ 0). */
  readonly dec: number;
  /** Stamp (with the map key as node) and dot of this node's latest increment. */
  readonly wallMs: number;
  readonly logical: number;
  readonly seq: number;
  /** TTL given with that increment. */
  readonly ttlSeconds: number;
}

/**
 * A PN-counter incarnation. (wallMs, logical, node) is its base: the stamp of
 * the state it replaced (a tombstone, an expired entry's latest write), or the
 * zero stamp (node '') for a counter started on a key never seen. The base is
 * the incarnation's identity and its place in the LWW order (just after the
 * state it replaced), so replicas that start counting from the same state
 * share one incarnation and their increments add up.
 */
export interface CounterState {
  readonly type: 'counter';
  readonly key: string;
  readonly wallMs: number;
  readonly logical: number;
  readonly node: string;
  /** Earliest physical ms any replica started this incarnation at (joins by min). */
  readonly createdAt: number;
  /** Shares by node id. */
  readonly shares: ReadonlyMap<string, CounterShare>;
}

export type KeyState = RegisterState | TombstoneState | CounterState;

/**
 * Seen dots per origin node, as sorted, disjoint, non-adjacent inclusive ranges
 * flattened to [lo1, hi1, lo2, hi2, ...]. Gaps are exactly the dots not seen yet.
 */
export type DotRanges = ReadonlyMap<string, readonly number[]>;

/**
 * What one replica sends another: key states, plus the dots they cover beyond
 * the dots of the states themselves (writes those states supersede). A local
 * operation's delta, an anti-entropy reply and a full state are all deltas.
 */
export interface Delta {
  readonly namespace: string;
  readonly states: readonly KeyState[];
  readonly context: DotRanges;
  /**
   * Causal dependencies (a local write's, from its session): per origin, a
   * counter `seq` such that the receiver must have seen every dot
   * `(origin, 1..seq)` before the delta's states become visible. Absent on
   * anti-entropy replies and full states, which are closed under the
   * dependencies of what they hold (INTERNALS §7).
   */
  readonly deps?: Deps;
}

/** Causal dependencies: per origin, the prefix `1..seq` of its dots that must be seen first. */
export type Deps = ReadonlyMap<string, number>;

/** A replica's summary for anti-entropy: the dots it has seen. Size O(origins + gaps). */
export interface Digest {
  readonly namespace: string;
  readonly context: DotRanges;
}

/** Options of a local write that may carry causal dependencies (`delete`, and every write through SetOptions). */
export interface WriteDeps {
  /**
   * Causal dependencies of the write (at most MAX_DEPS origins, each already
   * covered by this replica): they travel with its delta, and a receiver
   * keeps the write invisible until it covers them.
   */
  deps?: Deps;
}

export interface SetOptions extends WriteDeps {
  /** 1 s .. maxTtlSeconds (30 days); default 3600. */
  ttlSeconds?: number;
}

export interface MergeResult {
  /** Keys whose materialized state changed, in the order first changed. */
  readonly changedKeys: string[];
  /** Key states refused because a stamp was more than maxClockDriftMs ahead. */
  readonly rejectedStates: number;
  /** Set when the delta waits for its causal dependencies (held invisible, or a copy of what is held already). */
  readonly held?: true;
  /**
   * Deltas held earlier and applied by this merge, as applied (without the
   * states refused for clock drift, and then without their context): a node
   * persists them as it persists the merged delta. Absent when none.
   */
  readonly released?: readonly Delta[];
}

export interface GcResult {
  /** Tombstones and expired entries removed. */
  readonly removed: number;
}

export interface ReplicaStats {
  /** Key states held, including tombstones and expired entries not yet collected. */
  readonly states: number;
  readonly tombstones: number;
  /** Key states refused by merge for clock drift, since creation. */
  readonly driftRejections: number;
  /** Origins and ranges in the seen-dot context (digest size driver). */
  readonly contextOrigins: number;
  readonly contextRanges: number;
  /** Keys collected recently whose floor this replica still keeps (INTERNALS §4). */
  readonly collectedKeys: number;
  /** Deltas held for their causal dependencies, and how many were dropped when the buffer was full. */
  readonly pendingDeltas: number;
  readonly pendingDropped: number;
}
