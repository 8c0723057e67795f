/**
 * Commands, results and limits of the coordination state machine.
 *
 * A command is what a leader proposes into the Raft log: an envelope with the
 * leader's timestamp, the client's session and sequence number, and one
 * operation (a discriminated union on `type`). Every replica applies the same
 * commands in the same order and returns the same results.
 */
import type { ErrorCode } from '@parley/interface';
import type { JsonValue } from './json.js';

/** A lock fence carried by a strong write: rejected once a newer fence exists on that lock. */
export interface FenceRef {
  /** Lock namespace. */
  namespace: string;
  /** Lock key. */
  key: string;
  /** The fence token the writer was granted. */
  token: number;
}

export type SortBy = 'key' | 'created_at' | 'updated_at';
export type SortOrder = 'asc' | 'desc';

export type Operation =
  // session management
  | { type: 'register_session' }
  | { type: 'noop' }
  | { type: 'expire' }
  // strong namespaces
  | {
      type: 'set';
      namespace: string;
      key: string;
      value: JsonValue;
      ttlSeconds?: number;
      ifNotExists?: boolean;
      ifVersion?: string;
      fence?: FenceRef;
    }
  | { type: 'get'; namespace: string; key: string }
  | { type: 'delete'; namespace: string; key: string; ifVersion?: string; fence?: FenceRef }
  | {
      type: 'list';
      namespace: string;
      q?: string;
      /** Only keys that start with this (case-sensitive, as a watch's prefix). */
      prefix?: string;
      filter?: string;
      sortBy?: SortBy;
      sortOrder?: SortOrder;
      limit?: number;
      cursor?: string;
    }
  | {
      type: 'delete_namespace';
      namespace: string;
      pattern?: string;
      confirm: boolean;
      /** Only keys after this one (key order): where the previous bounded command stopped. */
      after?: string;
      /** Delete at most this many matching keys (the smallest); the result's `resume_after` says where to go on. */
      maxKeys?: number;
    }
  // claims
  | { type: 'claim'; namespace: string; key: string; value: JsonValue; ttlSeconds?: number }
  // leases
  | {
      type: 'lease_acquire';
      namespace: string;
      key: string;
      holder: string;
      ttlSeconds: number;
      stealIfExpired?: boolean;
      /** Present: the new state, written atomically with the acquisition. Absent: keep the current state. */
      state?: JsonValue;
      /** Guard for a state transition: the lease document's version the state was computed from. */
      ifVersion?: string;
      /** Guard for a state transition computed on an absent document. */
      ifNotExists?: boolean;
    }
  | { type: 'lease_renew'; namespace: string; key: string; holder: string; epoch: number; ttlSeconds: number }
  | {
      type: 'lease_write';
      namespace: string;
      key: string;
      holder: string;
      epoch: number;
      state: JsonValue;
      ifVersion?: string;
    }
  | { type: 'lease_release'; namespace: string; key: string; holder: string; epoch: number; state?: JsonValue }
  | {
      type: 'lease_cooperative_write';
      namespace: string;
      key: string;
      state: JsonValue;
      ifVersion?: string;
      ifNotExists?: boolean;
    }
  | { type: 'lease_attach'; namespace: string; key: string; holder: string }
  // locks
  | {
      type: 'lock_acquire';
      namespace: string;
      key: string;
      owner: string;
      ttlSeconds?: number;
      metadata?: JsonValue;
      waitSeconds?: number;
    }
  | { type: 'lock_renew'; namespace: string; key: string; owner: string; fence: number; ttlSeconds?: number }
  | { type: 'lock_release'; namespace: string; key: string; owner: string; fence: number }
  | { type: 'lock_inspect'; namespace: string; key: string }
  | { type: 'lock_list'; namespace: string };

export type OperationType = Operation['type'];

/** Operations that change nothing but time (and the caller's session liveness). */
export const READ_OPERATIONS: ReadonlySet<OperationType> = new Set<OperationType>([
  'get',
  'list',
  'lease_attach',
  'lock_inspect',
  'lock_list',
  'noop',
]);

/** One entry of the Raft log, as the coord state machine sees it. */
export interface Command {
  /** The proposing leader's clock, in ms since the epoch. State-machine time is max(previous, nowMs). */
  nowMs: number;
  /** The client session (from register_session); absent for leader-internal commands (expire, noop). */
  clientId?: string;
  /** Per-session sequence number, ≥ 1, unique per command the client issues. */
  seq?: number;
  /** The client has seen the results of every seq ≤ ackSeq: the state machine may forget them. */
  ackSeq?: number;
  op: Operation;
}

export type EntryKind = 'value' | 'claim' | 'lease';

/** A strong entry as callers see it. Times are state-machine milliseconds since the epoch. */
export interface Entry {
  namespace: string;
  key: string;
  /** 'value' for set, 'claim' for a won claim, 'lease' for a lease document. */
  kind: EntryKind;
  value: JsonValue;
  version: string;
  ttlSeconds: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

/** The lease document: the value of a 'lease' entry. */
export interface LeaseDocument {
  epoch: number;
  /** null once released. */
  holder: string | null;
  deadlineAt: number;
  state: JsonValue;
}

export interface LeaseView extends LeaseDocument {
  namespace: string;
  key: string;
  /** The lease entry's version: the guard for a conditional write of the state. */
  version: string;
  ttlSeconds: number;
}

export interface LockGrant {
  namespace: string;
  key: string;
  owner: string;
  fence: number;
  acquiredAt: number;
  expiresAt: number;
  ttlSeconds: number;
  metadata: JsonValue;
}

export interface LockInfo {
  namespace: string;
  key: string;
  /** The live holder, or null when the slot is free. */
  holder: LockGrant | null;
  /** The newest fence ever granted on this slot (0 if none is remembered). */
  lastFence: number;
  waiters: number;
}

export type OpResult =
  | { type: 'session'; clientId: string }
  | { type: 'noop' }
  | { type: 'expired'; entries: number; locks: number; waiters: number; sessions: number }
  | { type: 'entry'; entry: Entry; operation: 'created' | 'updated' }
  | { type: 'got'; entry: Entry }
  | { type: 'deleted'; namespace: string; key: string }
  | { type: 'list'; items: Entry[]; nextCursor: string | null }
  | {
      type: 'namespace_deleted';
      deleted_count: number;
      namespace: string;
      pattern_used: string;
      /** With `maxKeys`: the last key deleted, when more matching keys remain after it. */
      resume_after?: string;
    }
  | { type: 'claim'; won: boolean; value: JsonValue; version: string; entry: Entry }
  | { type: 'lease'; lease: LeaseView }
  | { type: 'lease_absent' }
  | { type: 'lock'; lock: LockGrant }
  | { type: 'lock_waiting'; namespace: string; key: string; position: number; waitDeadlineAt: number }
  | { type: 'lock_released'; released: boolean }
  | { type: 'lock_info'; lock: LockInfo }
  /** Held or contended locks in key order, at most maxListLimit of them. */
  | { type: 'lock_list'; locks: LockInfo[]; truncated: boolean };

export interface ErrorPayload {
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

export type CommandResult = { ok: true; value: OpResult } | { ok: false; error: ErrorPayload };

/** A result for a command other than the one being applied: a lock grant or wait timeout for a queued acquire. */
export interface Delivery {
  clientId: string;
  seq: number;
  result: CommandResult;
}

export interface ApplyOutput {
  result: CommandResult;
  /** Results owed to other waiting commands (a queued lock acquire granted or timed out). */
  deliveries: Delivery[];
  /** The live keys a delete_namespace removed, in key order (for change feeds); absent when none. */
  removedKeys?: string[];
}

export interface LogPosition {
  index: number;
  term: number;
}

/** Limits of the state machine. Every replica of a group must use the same values. */
export interface CoordLimits {
  /** Canonical-JSON size bound of a value or lease state (1 MiB). */
  maxValueBytes: number;
  /** Live entries per namespace (10,000). */
  maxKeysPerNamespace: number;
  /** TTL of a set when none is given (3600 s). */
  defaultTtlSeconds: number;
  /** Smallest TTL of an entry or lease (1 s). */
  minTtlSeconds: number;
  /** Largest TTL of an entry or lease (30 days). */
  maxTtlSeconds: number;
  /** TTL of a claim when none is given (30 days: claims are meant to outlive their callers). */
  defaultClaimTtlSeconds: number;
  /** How long a lease document outlives its deadline before the entry itself expires (1 day). */
  leaseRetentionSeconds: number;
  /** Lock TTL when none is given (60 s). */
  defaultLockTtlSeconds: number;
  /** Largest lock TTL (3600 s). */
  maxLockTtlSeconds: number;
  /** Canonical-JSON size bound of lock metadata (16 KiB). */
  maxLockMetadataBytes: number;
  /** Longest blocking wait of an acquire (3600 s). */
  maxLockWaitSeconds: number;
  /** Queued acquires per lock (64). */
  maxWaitersPerLock: number;
  /** Lock slots per namespace (10,000). */
  maxLocksPerNamespace: number;
  /** How long a free lock slot remembers its last fence (1 day). Older fences on it are stale. */
  idleLockRetentionSeconds: number;
  /** A session not used for this long is removed (1 day). */
  sessionTtlSeconds: number;
  /** Live sessions; the least recently used one is evicted beyond it (4096). */
  maxSessions: number;
  /** Remembered results per session (64); older ones are forgotten and their seq becomes stale. */
  maxResultsPerSession: number;
  /** Canonical size of all remembered results together (64 MiB). */
  maxCachedResultBytes: number;
  /** Default and largest page of list (100 and 1000); also the most locks lock_list returns. */
  defaultListLimit: number;
  maxListLimit: number;
  /** A list page stops before its values pass this size, after at least one item (8 MiB). */
  maxListPageBytes: number;
  /**
   * Furthest one command may move state-machine time forward (5,000 ms). A
   * command stamped later than time + this moves time by exactly this much, so
   * a leader whose clock stepped ahead expires at most what falls due within
   * the step. The default is five election timeouts of the node's default
   * Raft timing (1 s) and five `expire` periods: a healthy group's consecutive
   * stamps, leader changes included, stay well within it. After a longer
   * leaderless stretch time catches up one step per command, and leases and
   * locks outlive the stretch rather than expire for time nobody could renew.
   */
  maxTimeStepMs: number;
  /** Identifier bounds (characters). */
  maxNamespaceLength: number;
  maxKeyLength: number;
  maxIdLength: number;
}

export const DEFAULT_LIMITS: Readonly<CoordLimits> = Object.freeze({
  maxValueBytes: 1_048_576,
  maxKeysPerNamespace: 10_000,
  defaultTtlSeconds: 3600,
  minTtlSeconds: 1,
  maxTtlSeconds: 30 * 86_400,
  defaultClaimTtlSeconds: 30 * 86_400,
  leaseRetentionSeconds: 86_400,
  defaultLockTtlSeconds: 60,
  maxLockTtlSeconds: 3600,
  maxLockMetadataBytes: 16_384,
  maxLockWaitSeconds: 3600,
  maxWaitersPerLock: 64,
  maxLocksPerNamespace: 10_000,
  idleLockRetentionSeconds: 86_400,
  sessionTtlSeconds: 86_400,
  maxSessions: 4096,
  maxResultsPerSession: 64,
  maxCachedResultBytes: 64 * 1_048_576,
  defaultListLimit: 100,
  maxListLimit: 1000,
  maxListPageBytes: 8 * 1_048_576,
  maxTimeStepMs: 5_000,
  maxNamespaceLength: 128,
  maxKeyLength: 1024,
  maxIdLength: 256,
});

export interface CoordConfig {
  /** Cluster-wide secret mixed into version tokens. Same on every replica. */
  versionKey?: string;
  limits?: Partial<CoordLimits>;
}
