/**
 * Settings of the strong module (the `raft` option of `createNode`), with
 * their defaults.
 */
import type { CoordLimits } from '@parley/coord';
import { InvalidArgumentError, type PeerId } from '@parley/interface';
import { MAX_CHANGES_PER_PAGE } from './wire.js';

export interface StrongOptions {
  /**
   * The Raft group's voters when it is first formed (ignored once this node's
   * Raft log holds a membership). Default: this node alone, a group of one.
   * A node not listed starts as a non-member: it forwards every call to the
   * group, and can be added later with `cluster.addLearner` / `addVoter`.
   */
  voters?: PeerId[];
  /** Initial learners (non-voting members that replicate the log). */
  learners?: PeerId[];
  /** Milliseconds per Raft tick (default 100). */
  tickMs?: number;
  /** Election timeout in ticks (default 10: 1–2 s at 100 ms). */
  electionTimeoutTicks?: number;
  /** Heartbeat interval in ticks (default 1). */
  heartbeatTicks?: number;
  /**
   * Serve linearizable reads from the leader's lease instead of a heartbeat
   * round (Raft `readOnly: 'leaseBased'`). Off by default: it assumes bounded
   * drift between the members' tick rates and no process pauses (see
   * docs/guarantees.md, "Raft read paths"); ReadIndex assumes nothing about clocks.
   */
  leaseReads?: boolean;
  /**
   * Failover on connection loss (Raft `failoverOnDisconnect`): a follower whose
   * connection to the leader closes (a killed process, a closed socket)
   * campaigns within a few ticks instead of waiting out the election timeout,
   * the voters left taking turns by id. A leader that is frozen with its
   * sockets open (SIGSTOP, a long pause) still takes the election timeout.
   * Default: on, except with `leaseReads`, which it would break (a closed
   * connection does not prove the leader dead; see docs/guarantees.md):
   * `true` with `leaseReads` is `invalid_argument`.
   */
  failoverOnDisconnect?: boolean;
  /** Cluster-wide string mixed into version tokens; same on every member (default ''). */
  versionKey?: string;
  /** Coord limits; same on every member. */
  limits?: Partial<CoordLimits>;
  /** Snapshot the coord state once this many entries were applied since the last one (default 10,000). */
  snapshotEveryEntries?: number;
  /** … or once this many bytes of commands were applied since the last one (default 8 MiB). */
  snapshotEveryBytes?: number;
  /** Entries kept behind a snapshot for followers that lag a little (default 1000). */
  keepEntries?: number;
  /** Default bound of one call, forwarding and retries included (default 10,000 ms). */
  callTimeoutMs?: number;
  /** Bound of one forwarded attempt before it is re-sent (default 3000 ms; blocking lock waits excepted). */
  attemptTimeoutMs?: number;
  /**
   * The shortest interval between two `expire` proposals of a leader (default
   * 1000 ms). It proposes one only when something may have fallen due or
   * state-machine time lags its clock by `maxTimeStepMs / 2`: an idle group
   * writes nothing for seconds at a time.
   */
  expireEveryMs?: number;
  /** Client sessions this node keeps open at most (default 16; each a window of 32 calls). */
  maxSessions?: number;
  /** Calls waiting for a free session slot before `unavailable` (default 4096). */
  maxQueuedCalls?: number;
  /** Changes kept for `watch({fromRevision})` (default 10,000). */
  maxWatchHistory?: number;
  /** Changes per page a watch asks a member for when it polls (default and at most 1,000). */
  watchPageChanges?: number;
  /** InstallSnapshot chunk size (default 256 KiB). */
  maxSnapshotChunkBytes?: number;
  /**
   * Answer a CAS (`set` with `ifVersion`) that is sure to fail without a log
   * entry, at a linearizable read point (default true; docs/guarantees.md,
   * "A CAS that is sure to fail"). Off: every CAS goes through the log.
   */
  failFastCas?: boolean;
}

export type ResolvedStrongOptions = Required<Omit<StrongOptions, 'limits'>> & { limits: Partial<CoordLimits> };

function positiveInt(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new InvalidArgumentError(`raft.${name} must be a positive integer`);
  return v;
}

export function resolveStrongOptions(self: PeerId, o: StrongOptions = {}): ResolvedStrongOptions {
  const voters = o.voters && o.voters.length > 0 ? [...new Set(o.voters)] : [self];
  const learners = [...new Set(o.learners ?? [])].filter((l) => !voters.includes(l));
  if (voters.some((v) => typeof v !== 'string' || v === '')) {
    throw new InvalidArgumentError('raft.voters must be non-empty peer ids');
  }
  const leaseReads = o.leaseReads ?? false;
  if (leaseReads && o.failoverOnDisconnect === true) {
    throw new InvalidArgumentError('raft.failoverOnDisconnect cannot be used with raft.leaseReads');
  }
  return {
    voters,
    learners,
    tickMs: positiveInt('tickMs', o.tickMs ?? 100),
    electionTimeoutTicks: positiveInt('electionTimeoutTicks', o.electionTimeoutTicks ?? 10),
    heartbeatTicks: positiveInt('heartbeatTicks', o.heartbeatTicks ?? 1),
    leaseReads,
    failoverOnDisconnect: o.failoverOnDisconnect ?? !leaseReads,
    versionKey: o.versionKey ?? '',
    limits: o.limits ?? {},
    snapshotEveryEntries: positiveInt('snapshotEveryEntries', o.snapshotEveryEntries ?? 10_000),
    snapshotEveryBytes: positiveInt('snapshotEveryBytes', o.snapshotEveryBytes ?? 8 * 1024 * 1024),
    keepEntries: Math.max(0, Math.floor(o.keepEntries ?? 1000)),
    callTimeoutMs: positiveInt('callTimeoutMs', o.callTimeoutMs ?? 10_000),
    attemptTimeoutMs: positiveInt('attemptTimeoutMs', o.attemptTimeoutMs ?? 3_000),
    expireEveryMs: positiveInt('expireEveryMs', o.expireEveryMs ?? 1_000),
    maxSessions: positiveInt('maxSessions', o.maxSessions ?? 16),
    maxQueuedCalls: positiveInt('maxQueuedCalls', o.maxQueuedCalls ?? 4096),
    maxWatchHistory: positiveInt('maxWatchHistory', o.maxWatchHistory ?? 10_000),
    watchPageChanges: Math.min(
      MAX_CHANGES_PER_PAGE,
      positiveInt('watchPageChanges', o.watchPageChanges ?? MAX_CHANGES_PER_PAGE),
    ),
    maxSnapshotChunkBytes: positiveInt('maxSnapshotChunkBytes', o.maxSnapshotChunkBytes ?? 256 * 1024),
    failFastCas: o.failFastCas ?? true,
  };
}
