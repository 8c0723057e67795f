import { HybridLogicalClock } from './hlc.js';
import type { Delta, Digest, Entry, GcResult, JsonValue, MergeResult, ReplicaStats, SetOptions } from './types.js';

export const DEFAULT_TTL_SECONDS = 3600;
export const MAX_TTL_SECONDS = 30 * 24 * 3600;
export const DEFAULT_MAX_VALUE_BYTES = 1_048_576;
export const DEFAULT_MAX_LIVE_KEYS = 10_000;

export interface NamespaceReplicaOptions {
  namespace: string;
  /** Unique per replica and never reused after the replica's state is lost. */
  replicaId: string;
  /** Largest value, as UTF-8 JSON bytes. Default 1,048,576. */
  maxValueBytes?: number;
  /** Live (unexpired, undeleted) keys a local write may reach. Default 10,000. */
  maxLiveKeys?: number;
  /** Remote stamps further ahead than this are refused. Default 60,000. */
  maxClockDriftMs?: number;
  /** Default 3600. */
  defaultTtlSeconds?: number;
  /** Largest TTL a write may ask for. Default 30 days. */
  maxTtlSeconds?: number;
  /** A tombstone or expired entry is collected this long after its write. Default maxTtlSeconds·1000. */
  tombstoneGraceMs?: number;
}

/** One replica of one eventual namespace. See the package README and INTERNALS.md. */
export class NamespaceReplica {
  readonly namespace: string;
  readonly replicaId: string;
  readonly clock: HybridLogicalClock;

  constructor(options: NamespaceReplicaOptions) {
    this.namespace = options.namespace;
    this.replicaId = options.replicaId;
    this.clock = new HybridLogicalClock(options.replicaId, { maxClockDriftMs: options.maxClockDriftMs });
  }

  set(_key: string, _value: JsonValue, _nowMs: number, _options: SetOptions = {}): Delta {
    throw new Error('not implemented yet');
  }

  increment(_key: string, _by: number, _nowMs: number, _options: SetOptions = {}): Delta {
    throw new Error('not implemented yet');
  }

  delete(_key: string, _nowMs: number): Delta {
    throw new Error('not implemented yet');
  }

  get(_key: string, _nowMs: number): Entry | undefined {
    throw new Error('not implemented yet');
  }

  keys(_nowMs: number): string[] {
    throw new Error('not implemented yet');
  }

  entries(_nowMs: number): Array<[string, Entry]> {
    throw new Error('not implemented yet');
  }

  liveCount(_nowMs: number): number {
    throw new Error('not implemented yet');
  }

  merge(_delta: Delta, _nowMs: number): MergeResult {
    throw new Error('not implemented yet');
  }

  digest(): Digest {
    throw new Error('not implemented yet');
  }

  deltaFor(_remote: Digest): Delta {
    throw new Error('not implemented yet');
  }

  state(): Delta {
    throw new Error('not implemented yet');
  }

  gc(_nowMs: number): GcResult {
    throw new Error('not implemented yet');
  }

  stats(): ReplicaStats {
    throw new Error('not implemented yet');
  }
}
