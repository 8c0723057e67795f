import type { HardState, PeerId, RaftEntry, RaftSnapshot, SnapshotMeta } from '@parley/interface';

/** The empty peer id: no vote, no known leader. */
export const NONE: PeerId = '';

export type StateType = 'follower' | 'preCandidate' | 'candidate' | 'leader';

/** A forwarded proposal (follower → leader). */
export interface PropMessage {
  type: 'prop';
  from: PeerId;
  to: PeerId;
  term: number;
  entries: RaftEntry[];
}

/** AppendEntries: `entries` follow the entry at (`index`, `logTerm`). */
export interface AppMessage {
  type: 'app';
  from: PeerId;
  to: PeerId;
  term: number;
  logTerm: number;
  index: number;
  entries: RaftEntry[];
  commit: number;
}

/**
 * AppendEntries answer. Accepted: `index` is the follower's last index now
 * matching the leader. Rejected: `index` is the rejected probe index and
 * (`rejectHint`, `logTerm`) is the conflict hint: the largest index ≤ the
 * probe whose term is ≤ the probe's term, and that term.
 */
export interface AppRespMessage {
  type: 'appResp';
  from: PeerId;
  to: PeerId;
  term: number;
  index: number;
  reject: boolean;
  rejectHint: number;
  logTerm: number;
}

export interface VoteMessage {
  type: 'vote' | 'preVote';
  from: PeerId;
  to: PeerId;
  term: number;
  /** Candidate's last log term and index. */
  logTerm: number;
  index: number;
  /** Set by a leadership transfer: overrides leader stickiness. */
  transfer: boolean;
}

export interface VoteRespMessage {
  type: 'voteResp' | 'preVoteResp';
  from: PeerId;
  to: PeerId;
  term: number;
  reject: boolean;
}

export interface HeartbeatMessage {
  type: 'heartbeat';
  from: PeerId;
  to: PeerId;
  term: number;
  commit: number;
  /** ReadIndex context being confirmed, or empty. */
  context: Uint8Array;
}

export interface HeartbeatRespMessage {
  type: 'heartbeatResp';
  from: PeerId;
  to: PeerId;
  term: number;
  context: Uint8Array;
}

/** One chunk of an InstallSnapshot transfer. */
export interface SnapMessage {
  type: 'snap';
  from: PeerId;
  to: PeerId;
  term: number;
  meta: SnapshotMeta;
  /** Byte offset of `data` within the snapshot payload. */
  offset: number;
  totalBytes: number;
  data: Uint8Array;
}

/** Acknowledges snapshot bytes [0, offset) of the snapshot at `index`. */
export interface SnapRespMessage {
  type: 'snapResp';
  from: PeerId;
  to: PeerId;
  term: number;
  index: number;
  offset: number;
}

export interface TimeoutNowMessage {
  type: 'timeoutNow';
  from: PeerId;
  to: PeerId;
  term: number;
}

export interface ReadIndexMessage {
  type: 'readIndex';
  from: PeerId;
  to: PeerId;
  term: number;
  context: Uint8Array;
}

export interface ReadIndexRespMessage {
  type: 'readIndexResp';
  from: PeerId;
  to: PeerId;
  term: number;
  index: number;
  context: Uint8Array;
}

/** A transfer request forwarded by a follower to the leader. */
export interface TransferLeaderMessage {
  type: 'transferLeader';
  from: PeerId;
  to: PeerId;
  term: number;
  transferee: PeerId;
}

export type Message =
  | PropMessage
  | AppMessage
  | AppRespMessage
  | VoteMessage
  | VoteRespMessage
  | HeartbeatMessage
  | HeartbeatRespMessage
  | SnapMessage
  | SnapRespMessage
  | TimeoutNowMessage
  | ReadIndexMessage
  | ReadIndexRespMessage
  | TransferLeaderMessage;

export type MessageType = Message['type'];

export interface SoftState {
  lead: PeerId;
  state: StateType;
}

/** A linearizable read point: once `index` is applied, reads for `context` may be served. */
export interface ReadState {
  index: number;
  context: Uint8Array;
}

/**
 * Everything the application must do before calling `advance()`, in order:
 * persist `snapshot`, `entries` and `hardState` (one atomic save); send
 * `messages` (allowed in parallel with the save) and `messagesAfterPersist`
 * (only once the save is durable); apply `snapshot` then `committedEntries`;
 * serve `readStates` once their index is applied.
 */
export interface Ready {
  softState: SoftState | undefined;
  hardState: HardState | undefined;
  entries: RaftEntry[];
  snapshot: RaftSnapshot | undefined;
  committedEntries: RaftEntry[];
  messages: Message[];
  messagesAfterPersist: Message[];
  readStates: ReadState[];
  /** True when the save must be synced (entries, term or vote changed). */
  mustSync: boolean;
}

export type ReadOnlyOption = 'safe' | 'leaseBased';

export interface ProgressStatus {
  match: number;
  next: number;
  state: 'probe' | 'replicate' | 'snapshot';
  learner: boolean;
  recentActive: boolean;
  inflight: number;
}

export interface Status {
  id: PeerId;
  term: number;
  vote: PeerId;
  commit: number;
  applied: number;
  lead: PeerId;
  state: StateType;
  leadTransferee: PeerId;
  voters: PeerId[];
  learners: PeerId[];
  /** Per-peer replication progress (leader only). */
  progress: Record<PeerId, ProgressStatus> | undefined;
}

export type ConfChangeType = 'addVoter' | 'addLearner' | 'removeNode';

/** One-server-at-a-time membership change, carried in a `conf` entry. */
export interface ConfChange {
  type: ConfChangeType;
  node: PeerId;
}
