/** Options of a NamespaceReplica, their defaults and their checks. */
import { InvalidArgumentError } from '@parley/interface';
import { isWellFormed, utf8Length } from './json.js';
import { MAX_TTL_SECONDS } from './limits.js';
import { DEFAULT_MAX_PENDING_DELTAS, DEFAULT_MAX_PENDING_STATES } from './pending.js';
import type { Digest } from './types.js';

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
  /** Deltas, and states in them, held at most for their causal dependencies (the oldest go first). Defaults 512 and 8,192. */
  maxPendingDeltas?: number;
  maxPendingStates?: number;
}

export interface GcOptions {
  /**
   * Digests acknowledged by every other replica of the namespace (from anti-entropy).
   * When given, and this replica has seen everything each of them has, tombstones
   * and expired entries that all of them have seen are collected before the grace period.
   */
  peers?: readonly Digest[];
}

function positiveInt(name: string, v: number | undefined, dflt: number): number {
  const x = v ?? dflt;
  if (!Number.isSafeInteger(x) || x < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  return x;
}

/** The options with their defaults, checked (InvalidArgumentError). `defaultTtlSeconds` is checked by the replica. */
export function resolveReplicaOptions(options: NamespaceReplicaOptions) {
  if (typeof options.namespace !== 'string' || !isWellFormed(options.namespace)) {
    throw new InvalidArgumentError('namespace must be a well-formed string');
  }
  if (typeof options.replicaId !== 'string' || options.replicaId.length === 0 || !isWellFormed(options.replicaId)) {
    throw new InvalidArgumentError('replicaId must be a non-empty well-formed string');
  }
  if (utf8Length(options.replicaId) > 255) throw new InvalidArgumentError('replicaId is longer than 255 bytes');
  const maxTtlSeconds = positiveInt('maxTtlSeconds', options.maxTtlSeconds, MAX_TTL_SECONDS);
  const resolved = {
    namespace: options.namespace,
    replicaId: options.replicaId,
    maxClockDriftMs: options.maxClockDriftMs,
    maxValueBytes: positiveInt('maxValueBytes', options.maxValueBytes, DEFAULT_MAX_VALUE_BYTES),
    maxLiveKeys: positiveInt('maxLiveKeys', options.maxLiveKeys, DEFAULT_MAX_LIVE_KEYS),
    maxKeyBytes: positiveInt('maxKeyBytes', options.maxKeyBytes, DEFAULT_MAX_KEY_BYTES),
    maxTtlSeconds,
    defaultTtlSeconds: positiveInt('defaultTtlSeconds', options.defaultTtlSeconds, DEFAULT_TTL_SECONDS),
    tombstoneGraceMs: positiveInt('tombstoneGraceMs', options.tombstoneGraceMs, maxTtlSeconds * 1000),
    maxPendingDeltas: positiveInt('maxPendingDeltas', options.maxPendingDeltas, DEFAULT_MAX_PENDING_DELTAS),
    maxPendingStates: positiveInt('maxPendingStates', options.maxPendingStates, DEFAULT_MAX_PENDING_STATES),
  };
  if (maxTtlSeconds < 1 || maxTtlSeconds > MAX_TTL_SECONDS) {
    throw new InvalidArgumentError(`maxTtlSeconds must be in 1..${MAX_TTL_SECONDS}`);
  }
  if (resolved.tombstoneGraceMs < maxTtlSeconds * 1000) {
    throw new InvalidArgumentError(
      `tombstoneGraceMs (${resolved.tombstoneGraceMs}) must be at least maxTtlSeconds·1000 (${maxTtlSeconds * 1000}): a shorter grace lets a collected tombstone's superseded write come back`,
    );
  }
  return resolved;
}
