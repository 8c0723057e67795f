/**
 * `coord-*` scenarios: their configuration, the workload's constants and the shapes of a
 * simulated client and its call in flight (shared by ./coord-setup.ts and ./coord-workload.ts).
 */

import type { HistoryValue } from '@parley/check';
import type { Command, CommandResult, Operation, SessionSequencer } from '@parley/coord';
import type { PeerId } from '@parley/interface';
import type { NemesisOptions } from '@parley/sim';

export interface CoordScenarioConfig {
  name: string;
  description: string;
  voters: 3 | 5;
  /** `hot-cas`: the mixed workload's clients all CAS one key (./workload.ts `hotCasOp`). */
  workload: 'mixed' | 'ttl' | 'hot-cas';
  clients?: number;
  network?: {
    lossRate?: number;
    duplicateRate?: number;
    reorder?: boolean;
    latency?: { minMs: number; meanMs: number; maxMs: number };
  };
  nemesis: NemesisOptions;
  /**
   * Cut the leader off just before a check-quorum round, for 2.5–4 s, every few seconds:
   * it passes that round on the answers it already had and believes it leads for another
   * election timeout while the others elect a successor; clients split between the two.
   */
  cutLeaderAfterQuorumCheck?: boolean;
  /**
   * Suspend the leader (its clock stands still) just before a check-quorum round and cut it
   * off; once a successor has committed writes, resume it still cut off and route half the
   * clients to it (./coord-stale-leader.ts): a deposed leader that believes it leads
   * receives reads. `'clock-runs'`: pause it with its clock running instead (a GC pause).
   */
  staleLeaderReads?: boolean | 'clock-runs';
  /**
   * Script Figure 8 of the Raft paper once per run (./figure8-director.ts) under the client
   * load: the leader's first step-1 entry is a coord `set` without a session.
   */
  figure8?: boolean;
  /**
   * Lease reads under large tick drift inside the lease's assumption (./coord-lease-drift.ts):
   * one voter's clock runs slow, the others fast (replaces `driftPpm`); leadership is moved
   * to the slow voter, which is cut off just before a check-quorum round while half the
   * clients stay pinned to it and read.
   */
  leaseDrift?: LeaseDriftOptions;
  /** Largest batch of entries per append message (1: one entry per message). Default: Raft's. */
  maxSizePerMsgBytes?: number;
  /** How leaders confirm reads that skip the log: ReadIndex (`safe`, default) or the lease. */
  readOnly?: 'safe' | 'leaseBased';
  /** Voters' clock offsets are drawn in ±skewMs (constant), plus ±driftPpm (or `leaseDrift`'s drifts). */
  skewMs: number;
  driftPpm?: number;
  disk?: { tornWriteRate?: number };
  /** Snapshot cadence (entries) and entries kept behind it: small values force InstallSnapshot. */
  snapshotEveryEntries?: number;
  keepEntries?: number;
  safetyMs?: number;
  livenessBoundMs?: number;
}

export const TICK_MS = 100;
/** A client re-sends an unanswered command after this long (to the host it now believes leads). */
export const RETRY_MS = 600;
/** A client gives up on a call after this long: the call is recorded as indeterminate (`info`). */
export const GIVE_UP_MS = 4_000;
export const VERSION_KEY = 'sim-cluster';
/** In a call's map of observed error codes: this error is an `ok` read of nothing. */
export const ABSENT = '=absent';

export const ENTRY_KEYS = ['k0', 'k1'];
export const CLAIM_KEYS = ['c0', 'c1'];
export const LEASE_KEYS = ['l0', 'l1'];
export const LOCK_KEYS = ['m0', 'm1'];

export type ModelName = 'entry' | 'lease' | 'lock';

/** One call in flight of a client. */
export interface Call {
  readonly op: Operation;
  /** Session-numbered command (undefined for register_session). */
  readonly command: Omit<Command, 'nowMs'>;
  readonly invokedAt: number;
  lastSentAt: number;
  /** Times the command was handed to a host (a later attempt is a retry: the leader logs it). */
  sends: number;
  giveUpAt: number;
  /** `lock_waiting` arrived: the answer comes as a delivery (to the host it was sent to). */
  waiting: boolean;
  /** A read served through ReadIndex or the lease instead of the log. */
  viaRead: boolean;
  finish(result: CommandResult | undefined): void;
}

/** `coord-5-lease-drift`: the clock drifts its voters run at. */
export interface LeaseDriftOptions {
  /** Drift of the slow voter's clock, in ppm (negative: it ticks slower). */
  slowPpm: number;
  /** Drift of every other voter's clock, drawn in [min, max] ppm. */
  fastPpm: { min: number; max: number };
}

export interface Client {
  readonly name: string;
  session: SessionSequencer | undefined;
  target: PeerId | undefined;
  call: Call | undefined;
  versions: Map<string, string>;
  leases: Map<string, number>;
  locks: Map<string, number>;
  /**
   * Pinned to a deposed leader (`coord-5-stale-reads`): issues only reads that skip the log,
   * and routes them to `target` while it claims to lead, without asking around.
   */
  pinned?: boolean;
}

/** Records the outcome of a call in the `model` history (see ./coord-setup.ts). */
export type RecordCall = (
  model: ModelName,
  c: Client,
  f: string,
  key: string,
  input: HistoryValue,
  op: Operation,
  okValue: (r: CommandResult & { ok: true }) => HistoryValue,
  observed: Record<string, string>,
  after?: (r: CommandResult) => void,
) => void;

/** Starts a call; `finish` records its outcome (undefined: gave up, outcome unknown). */
export type StartCall = (
  c: Client,
  op: Operation,
  finish: (r: CommandResult | undefined) => void,
  viaRead?: boolean,
) => void;
