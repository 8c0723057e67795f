/** Settings of the eventual module, with their defaults. */
import { InvalidArgumentError } from '@parley/interface';

export interface EventualOptions {
  /** Largest value, as UTF-8 JSON bytes. Default 1,048,576. */
  maxValueBytes?: number;
  /** Live keys per namespace. Default 10,000. */
  maxLiveKeys?: number;
  /** Remote stamps further ahead than this are refused and counted. Default 60,000. */
  maxClockDriftMs?: number;
  /** TTL of a write that names none. Default 3600. */
  defaultTtlSeconds?: number;
  /** Largest TTL. Default 30 days. */
  maxTtlSeconds?: number;
  /** Tombstones and expired entries are collected this long after their last write; also the incarnation bound. Default maxTtlSeconds·1000. */
  tombstoneGraceMs?: number;
  /**
   * Longest a local write waits for company before its gossip message leaves. Default 0: the
   * message leaves on the next timer turn, with the writes made durable by the same group
   * commit (which already batches them); raise it to pack writes of several commits together.
   */
  gossipDelayMs?: number;
  /**
   * Longest a delta merged from a peer (gossip, anti-entropy) waits before its batch is
   * written: remote deltas arriving within this window share one fsync. Local writes are
   * unaffected (durable before applied); a crash in the window loses only copies their
   * origin holds durably. Default 50 ms; 0 writes each one at once.
   */
  remoteCommitDelayMs?: number;
  /**
   * Gossip a local write as soon as it is planned, while its batch is being written, instead
   * of once it is durable: peers see it one fsync sooner. Default false. The price (see
   * docs/guarantees.md): a write whose batch then fails, or that a crash loses, may still
   * reach every replica (it comes back to its origin by anti-entropy), so such a write
   * fails with `outcome_unknown` rather than as not written; and a node restarted after a
   * crash writes under a new replica id (`<peerId>~<n>`, its state kept), so it never
   * reuses the dot of a write it lost but a peer holds.
   */
  gossipBeforeDurable?: boolean;
  /** Largest gossip message (several deltas); larger batches are split. Default 256 KiB. */
  maxGossipBytes?: number;
  /**
   * Direct fan-out: while this node is connected to at most this many peers and to every
   * replica of the namespace heard from in the last `10 × antiEntropyMs`, its gossip goes
   * straight to each connected peer as one one-way message (one copy per peer, nothing
   * forwarded) instead of through gossipsub's mesh (several copies per peer). Otherwise, or
   * with 0, gossipsub carries it and forwards it to peers this node does not reach.
   * Default 32.
   */
  directFanoutPeers?: number;
  /** Mean period of anti-entropy rounds (jittered ±50%). Default 5,000 ms. */
  antiEntropyMs?: number;
  /** Timeout of one anti-entropy or majority request. Default 5,000 ms. */
  requestTimeoutMs?: number;
  /** Period of garbage collection of tombstones and expired entries. Default 60,000 ms. */
  gcIntervalMs?: number;
  /** Log bytes after which a namespace's log is folded into a snapshot (at least this, at most the snapshot's own size). Default 4 MiB. */
  compactLogBytes?: number;
  /**
   * A peer not heard from for this long (gossip, requests, anti-entropy of the namespace)
   * no longer counts as one of its replicas for 'majority' operations. Default 3,600,000 (1 h).
   */
  replicaTtlMs?: number;
  /** Changes an unread `changes()` iterator may queue before it fails. Default 10,000. */
  maxQueuedChanges?: number;
  /**
   * Enforce the incarnation rule (a replica out of contact longer than
   * tombstoneGraceMs discards its state and rejoins under a new replica id).
   * Default true; turning it off exists to demonstrate what it prevents.
   */
  incarnations?: boolean;
}

export type ResolvedEventualOptions = Required<EventualOptions>;

const MAX_TTL = 30 * 24 * 3600;

function int(name: string, v: number | undefined, dflt: number, min: number, max: number): number {
  const x = v ?? dflt;
  if (!Number.isSafeInteger(x) || x < min || x > max) {
    throw new InvalidArgumentError(`eventual.${name} must be an integer in ${min}..${max}, got ${v}`);
  }
  return x;
}

export function resolveEventualOptions(o: EventualOptions = {}): ResolvedEventualOptions {
  const maxTtlSeconds = int('maxTtlSeconds', o.maxTtlSeconds, MAX_TTL, 1, MAX_TTL);
  return {
    maxValueBytes: int('maxValueBytes', o.maxValueBytes, 1_048_576, 1, 64 * 1_048_576),
    maxLiveKeys: int('maxLiveKeys', o.maxLiveKeys, 10_000, 1, 100_000_000),
    maxClockDriftMs: int('maxClockDriftMs', o.maxClockDriftMs, 60_000, 0, 86_400_000),
    defaultTtlSeconds: int('defaultTtlSeconds', o.defaultTtlSeconds, Math.min(3600, maxTtlSeconds), 1, maxTtlSeconds),
    maxTtlSeconds,
    tombstoneGraceMs: int('tombstoneGraceMs', o.tombstoneGraceMs, maxTtlSeconds * 1000, 0, Number.MAX_SAFE_INTEGER),
    gossipDelayMs: int('gossipDelayMs', o.gossipDelayMs, 0, 0, 10_000),
    remoteCommitDelayMs: int('remoteCommitDelayMs', o.remoteCommitDelayMs, 50, 0, 10_000),
    maxGossipBytes: int('maxGossipBytes', o.maxGossipBytes, 256 * 1024, 1024, 4 * 1024 * 1024 - 1024),
    directFanoutPeers: int('directFanoutPeers', o.directFanoutPeers, 32, 0, 1024),
    antiEntropyMs: int('antiEntropyMs', o.antiEntropyMs, 5_000, 10, 86_400_000),
    requestTimeoutMs: int('requestTimeoutMs', o.requestTimeoutMs, 5_000, 1, 600_000),
    gcIntervalMs: int('gcIntervalMs', o.gcIntervalMs, 60_000, 10, 86_400_000),
    compactLogBytes: int('compactLogBytes', o.compactLogBytes, 4 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    replicaTtlMs: int('replicaTtlMs', o.replicaTtlMs, 3_600_000, 1_000, 30 * 86_400_000),
    maxQueuedChanges: int('maxQueuedChanges', o.maxQueuedChanges, 10_000, 1, 10_000_000),
    incarnations: o.incarnations ?? true,
    gossipBeforeDurable: o.gossipBeforeDurable ?? false,
  };
}
