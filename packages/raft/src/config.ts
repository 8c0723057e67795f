import type { PeerId, RaftLogReader, Random } from '@parley/interface';
import type { ReadOnlyOption } from './types.js';

export interface RaftConfig {
  /** This node's id (never ''). */
  id: PeerId;
  storage: RaftLogReader;
  /** Source of the randomized election timeouts. */
  random: Random;
  /** Ticks without hearing from a leader before campaigning (randomized in [t, 2t)). Default 10. */
  electionTimeoutTicks?: number;
  /** Ticks between leader heartbeats. Default 1. */
  heartbeatTicks?: number;
  /** Run a pre-vote round before bumping the term. Default true. */
  preVote?: boolean;
  /** A leader that has not heard from a quorum within an election timeout steps down. Default true. */
  checkQuorum?: boolean;
  /**
   * 'safe' confirms leadership per read with a heartbeat round; 'leaseBased'
   * answers at once while a quorum acknowledged the leader recently enough
   * (see `leaseDriftMarginTicks`), else falls back to the 'safe' round. Every
   * voter of a group must use the same setting. Default 'safe'.
   */
  readOnly?: ReadOnlyOption;
  /**
   * Lease reads: ticks cut from the lease for the drift between members' tick
   * rates. A leader serves a lease read only while a quorum acknowledged a
   * message it sent less than `electionTimeoutTicks - 1 - leaseDriftMarginTicks`
   * of its own ticks ago, which is safe while the leader's tick period is at most
   * (E - 1) / (E - 1 - margin) times any follower's. 0 ≤ margin ≤ E - 2.
   * Default ceil(E / 5) (E = 10: 2, a 7-tick lease tolerating 28% slower leader ticks).
   */
  leaseDriftMarginTicks?: number;
  /**
   * Failover on connection loss (`RawNode.reportDisconnect`, called by the
   * driver on the transport's `peer:disconnect`): a voter whose connection to
   * its leader closed forgets that leader (so it no longer refuses pre-votes
   * as sticky to it, and answers those it refused in the last two ticks) and
   * campaigns with pre-vote within a few ticks instead of an election timeout:
   * the other voters take turns by id, the first at once, each next two ticks
   * later, two turns each; one that granted another's pre-vote waits a round
   * more, so votes do not split. A learner keeps naming its leader. Never with
   * 'leaseBased' reads: a closed connection does not prove the leader dead,
   * and its lease rests on followers deferring to it for an election timeout
   * (true with 'leaseBased' throws `invalid_argument`). Default: on unless
   * `readOnly` is 'leaseBased'.
   */
  failoverOnDisconnect?: boolean;
  /** Followers forward proposals to the leader (else `propose` throws NotLeaderError). Default true. */
  forwardProposals?: boolean;
  /** Largest batch of entries in one append message. Default 1 MiB. */
  maxSizePerMsgBytes?: number;
  /** Append messages in flight per follower. Default 256. */
  maxInflightMsgs?: number;
  /** Bytes of entries in flight per follower (0 = count only). Default 32 MiB. */
  maxInflightBytes?: number;
  /** Bytes of committed entries handed out per Ready. Default 16 MiB. */
  maxCommittedSizePerReadyBytes?: number;
  /** Uncommitted bytes a leader accepts before refusing proposals. Default 64 MiB. */
  maxUncommittedEntriesBytes?: number;
  /** Size of one InstallSnapshot chunk. Default 256 KiB. */
  maxSnapshotChunkBytes?: number;
  /** Largest snapshot a follower accepts. Default 1 GiB. */
  maxSnapshotBytes?: number;
  /** ReadIndex requests queued before `readIndex` throws `unavailable`. Default 4096. */
  maxPendingReads?: number;
  /** The application's last applied index at restart. Default: the snapshot index. */
  applied?: number;
  /**
   * Initial membership of a new cluster, used only when storage is empty: it is
   * written as committed conf entries 1..n at term 1. Leave empty on a member
   * that joins an existing cluster (it learns the membership from the leader).
   */
  voters?: PeerId[];
  learners?: PeerId[];
}

export interface ProposalResult {
  index: number;
  term: number;
}
