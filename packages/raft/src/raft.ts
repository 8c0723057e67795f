import {
  type ConfState,
  type HardState,
  InvalidArgumentError,
  NotLeaderError,
  type PeerId,
  type RaftEntry,
  type RaftLogReader,
  type RaftSnapshot,
  type Random,
  UnavailableError,
} from '@parley/interface';
import { decodeConfChange, encodeConfChange } from './confchange.js';
import { entryBytes, RaftLog } from './log.js';
import { Progress } from './progress.js';
import {
  type AppMessage,
  type AppRespMessage,
  type ConfChange,
  type HeartbeatMessage,
  type HeartbeatRespMessage,
  type Message,
  NONE,
  type ReadOnlyOption,
  type ReadState,
  type SnapMessage,
  type SnapRespMessage,
  type StateType,
  type Status,
  type VoteMessage,
} from './types.js';

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

interface PendingRead {
  index: number;
  from: PeerId;
  context: Uint8Array;
  acks: Set<PeerId>;
  /** Leader tick at which the read's first heartbeat round went out. */
  sentTick: number;
}

/** The leader's last index when its tick count reached `tick`: later entries were appended at `tick` or after. */
interface AppendMark {
  tick: number;
  lastIndex: number;
}

interface IncomingSnapshot {
  from: PeerId;
  snapshot: RaftSnapshot['meta'];
  totalBytes: number;
  receivedBytes: number;
  chunks: Uint8Array[];
}

function ctxKey(ctx: Uint8Array): string {
  let s = '';
  for (let i = 0; i < ctx.length; i++) s += String.fromCharCode(ctx[i] as number);
  return s;
}

const EMPTY = new Uint8Array(0);

/**
 * The Raft state machine. It performs no I/O: input arrives through `step`,
 * `tick` and the propose/read/transfer calls; output accumulates in `msgs`,
 * `readStates` and the log, and is drained by RawNode's Ready.
 */
export class Raft {
  readonly id: PeerId;
  term = 0;
  vote: PeerId = NONE;
  lead: PeerId = NONE;
  state: StateType = 'follower';
  readonly log: RaftLog;
  readonly voters = new Set<PeerId>();
  readonly learners = new Set<PeerId>();
  progress = new Map<PeerId, Progress>();
  msgs: Message[] = [];
  readStates: ReadState[] = [];
  leadTransferee: PeerId = NONE;
  pendingConfIndex = 0;
  uncommittedBytes = 0;
  /** Bootstrap conf entries, already applied to the membership by Raft itself. */
  private bootstrapIndex = 0;

  electionElapsed = 0;
  heartbeatElapsed = 0;
  randomizedElectionTimeout = 0;
  /** Ticks since this node started: the leader's clock for lease reads. */
  ticks = 0;
  /** Leader: marks of the last lease's worth of ticks, oldest first (see `appendTick`). */
  private appendMarks: AppendMark[] = [];
  /** Leader: a TimeoutNow went out this term, so stickiness no longer protects the lease. */
  private timeoutNowSent = false;
  /** Started from a persisted term (a restart, not a fresh member): see `leaderSticky`. */
  private readonly restarted: boolean;
  private readonly votes = new Map<PeerId, boolean>();
  private readonly pendingReads = new Map<string, PendingRead>();
  private readonly readQueue: string[] = [];
  private pendingReadIndex: { from: PeerId; context: Uint8Array }[] = [];
  private incoming: IncomingSnapshot | undefined;
  /** Peers owed an append (true: even an empty one), flushed in one batch before the next Ready. */
  private readonly dirty = new Map<PeerId, boolean>();
  /** Every peer is owed an append (new entries) / a commit update. */
  private appendAll = false;
  private commitAll = false;

  readonly electionTimeout: number;
  readonly heartbeatTimeout: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  readonly readOnlyOption: ReadOnlyOption;
  /** Lease length in the leader's ticks (see RaftConfig.leaseDriftMarginTicks). */
  readonly leaseTicks: number;
  readonly forwardProposals: boolean;
  readonly maxSizePerMsg: number;
  readonly maxInflightMsgs: number;
  readonly maxInflightBytes: number;
  readonly maxCommittedSizePerReady: number;
  readonly maxUncommittedBytes: number;
  readonly maxSnapshotChunk: number;
  readonly maxSnapshotBytes: number;
  readonly maxPendingReads: number;
  private readonly random: Random;

  constructor(cfg: RaftConfig) {
    if (!cfg.id) throw new InvalidArgumentError('raft: id must not be empty');
    this.id = cfg.id;
    this.random = cfg.random;
    this.electionTimeout = cfg.electionTimeoutTicks ?? 10;
    this.heartbeatTimeout = cfg.heartbeatTicks ?? 1;
    if (this.heartbeatTimeout < 1 || this.electionTimeout <= this.heartbeatTimeout) {
      throw new InvalidArgumentError('raft: need 1 ≤ heartbeatTicks < electionTimeoutTicks');
    }
    this.preVote = cfg.preVote ?? true;
    this.checkQuorum = cfg.checkQuorum ?? true;
    this.readOnlyOption = cfg.readOnly ?? 'safe';
    if (this.readOnlyOption === 'leaseBased' && !this.checkQuorum) {
      throw new InvalidArgumentError('raft: leaseBased reads require checkQuorum');
    }
    const margin = cfg.leaseDriftMarginTicks ?? Math.ceil(this.electionTimeout / 5);
    if (!Number.isInteger(margin) || margin < 0 || margin > this.electionTimeout - 2) {
      throw new InvalidArgumentError('raft: need 0 ≤ leaseDriftMarginTicks ≤ electionTimeoutTicks - 2', {
        leaseDriftMarginTicks: margin,
      });
    }
    this.leaseTicks = this.electionTimeout - 1 - margin;
    this.forwardProposals = cfg.forwardProposals ?? true;
    this.maxSizePerMsg = cfg.maxSizePerMsgBytes ?? 1024 * 1024;
    this.maxInflightMsgs = cfg.maxInflightMsgs ?? 256;
    this.maxInflightBytes = cfg.maxInflightBytes ?? 32 * 1024 * 1024;
    this.maxCommittedSizePerReady = cfg.maxCommittedSizePerReadyBytes ?? 16 * 1024 * 1024;
    this.maxUncommittedBytes = cfg.maxUncommittedEntriesBytes ?? 64 * 1024 * 1024;
    this.maxSnapshotChunk = cfg.maxSnapshotChunkBytes ?? 256 * 1024;
    this.maxSnapshotBytes = cfg.maxSnapshotBytes ?? 1024 * 1024 * 1024;
    this.maxPendingReads = cfg.maxPendingReads ?? 4096;
    if (this.maxInflightMsgs < 1) throw new InvalidArgumentError('raft: maxInflightMsgs must be ≥ 1');

    const snapIndex = cfg.storage.snapshot().meta.index;
    this.log = new RaftLog(cfg.storage, cfg.applied ?? snapIndex);
    const { hardState, confState } = cfg.storage.initialState();
    for (const v of confState.voters) this.voters.add(v);
    for (const l of confState.learners) if (!this.voters.has(l)) this.learners.add(l);
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.restarted = hardState.term > 0;
    const fresh = hardState.term === 0 && cfg.storage.lastIndex() === 0 && snapIndex === 0;
    if (fresh && (cfg.voters?.length ?? 0) > 0) this.bootstrap(cfg.voters ?? [], cfg.learners ?? []);
    this.becomeFollower(this.term, NONE);
  }

  /**
   * A new cluster member: the initial membership becomes committed conf
   * entries at term 1 (indexes 1..n, identical on every bootstrapping member),
   * so a member added later learns it by plain replication.
   */
  private bootstrap(voters: PeerId[], learners: PeerId[]): void {
    const changes: ConfChange[] = [
      ...[...new Set(voters)].sort().map((node): ConfChange => ({ type: 'addVoter', node })),
      ...[...new Set(learners)]
        .filter((l) => !voters.includes(l))
        .sort()
        .map((node): ConfChange => ({ type: 'addLearner', node })),
    ];
    const ents: RaftEntry[] = changes.map((cc, i) => ({
      term: 1,
      index: i + 1,
      type: 'conf',
      data: encodeConfChange(cc),
    }));
    this.log.append(ents);
    this.log.commitTo(ents.length);
    this.bootstrapIndex = ents.length;
    this.term = 1;
    for (const cc of changes) this.applyConfChange(cc);
  }

  // ---- helpers -------------------------------------------------------------

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  confState(): ConfState {
    return { voters: [...this.voters].sort(), learners: [...this.learners].sort() };
  }

  promotable(): boolean {
    return this.voters.has(this.id) && this.log.unstableSnapshot === undefined;
  }

  private quorum(): number {
    return Math.floor(this.voters.size / 2) + 1;
  }

  private send(m: Message): void {
    this.msgs.push(m);
  }

  private resetRandomizedElectionTimeout(): void {
    this.randomizedElectionTimeout = this.electionTimeout + this.random.int(this.electionTimeout);
  }

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTimeout();
    this.leadTransferee = NONE;
    this.timeoutNowSent = false;
    this.appendMarks = [];
    this.votes.clear();
    this.dirty.clear();
    this.appendAll = false;
    this.commitAll = false;
    this.pendingReads.clear();
    this.readQueue.length = 0;
    this.pendingReadIndex = [];
    this.pendingConfIndex = 0;
    this.uncommittedBytes = 0;
    this.progress = new Map();
    const last = this.log.lastIndex();
    for (const id of [...this.voters, ...this.learners]) {
      const pr = new Progress(last + 1, this.learners.has(id), this.maxInflightMsgs, this.maxInflightBytes);
      if (id === this.id) pr.match = last;
      this.progress.set(id, pr);
    }
  }

  becomeFollower(term: number, lead: PeerId): void {
    this.reset(term);
    this.lead = lead;
    this.state = 'follower';
  }

  private becomePreCandidate(): void {
    if (this.state === 'leader') throw new Error('raft: leader cannot become pre-candidate');
    // Neither the term nor the vote changes: a failed pre-vote disturbs no one.
    this.state = 'preCandidate';
    this.votes.clear();
    this.lead = NONE;
    this.resetRandomizedElectionTimeout();
  }

  private becomeCandidate(): void {
    if (this.state === 'leader') throw new Error('raft: leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = 'candidate';
  }

  private becomeLeader(): void {
    if (this.state === 'follower') throw new Error('raft: follower cannot become leader');
    this.reset(this.term);
    this.lead = this.id;
    this.state = 'leader';
    const self = this.progress.get(this.id);
    if (self) {
      self.becomeReplicate();
      self.match = this.log.stableIndex();
      self.next = this.log.lastIndex() + 1;
    }
    // No conf change until every earlier one (and this term's first entry) is applied.
    this.pendingConfIndex = this.log.lastIndex();
    this.appendMarks = [{ tick: this.ticks, lastIndex: this.log.lastIndex() }];
    // An empty entry of the new term lets earlier-term entries commit (§5.4.2).
    this.appendEntries([{ term: 0, index: 0, type: 'normal', data: EMPTY }]);
  }

  // ---- time ----------------------------------------------------------------

  tick(): void {
    this.ticks++;
    if (this.state === 'leader') {
      this.markAppends();
      this.tickHeartbeat();
    } else this.tickElection();
  }

  /** Records the last index at this tick, keeping only the marks a lease can still use. */
  private markAppends(): void {
    const marks = this.appendMarks;
    marks.push({ tick: this.ticks, lastIndex: this.log.lastIndex() });
    while (marks.length > 1 && (marks[0] as AppendMark).tick <= this.ticks - this.leaseTicks - 1) marks.shift();
  }

  /**
   * A lower bound of the leader tick at which entry `index` (of this term) was
   * appended, hence of the send tick of any message carrying it; -Infinity
   * when the entry is older than the marks kept.
   */
  private appendTick(index: number): number {
    for (let i = this.appendMarks.length - 1; i >= 0; i--) {
      const m = this.appendMarks[i] as AppendMark;
      if (m.lastIndex < index) return m.tick;
    }
    return Number.NEGATIVE_INFINITY;
  }

  /**
   * Whether this node refuses (pre-)votes without the transfer flag, and, with
   * lease reads, manual campaigns: it heard from a live leader less than an
   * election timeout ago, or (lease reads) it restarted less than an election
   * timeout ago and may have promised that to a leader before the restart.
   */
  leaderSticky(): boolean {
    if (!this.checkQuorum) return false;
    if (this.lead !== NONE && this.electionElapsed < this.electionTimeout) return true;
    return this.readOnlyOption === 'leaseBased' && this.restarted && this.ticks < this.electionTimeout;
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTimeout) {
      this.electionElapsed = 0;
      if (this.checkQuorum && !this.quorumActive()) {
        this.becomeFollower(this.term, NONE);
        return;
      }
      if (this.leadTransferee !== NONE) this.leadTransferee = NONE; // transfer timed out
    }
    if (this.heartbeatElapsed >= this.heartbeatTimeout) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat();
    }
  }

  private quorumActive(): boolean {
    let active = 0;
    for (const [id, pr] of this.progress) {
      if (id === this.id) {
        if (this.voters.has(id)) active++;
        continue;
      }
      if (pr.recentActive && this.voters.has(id)) active++;
      pr.recentActive = false;
    }
    return active >= this.quorum();
  }

  // ---- elections -------------------------------------------------------------

  /** Starts an election (pre-vote first when enabled) unless conf changes await application. */
  hup(transfer: boolean): void {
    if (this.state === 'leader' || !this.promotable()) return;
    if (this.hasUnappliedConfChanges()) return;
    if (this.preVote && !transfer) this.campaign('preElection');
    else this.campaign(transfer ? 'transfer' : 'election');
  }

  private hasUnappliedConfChanges(): boolean {
    let lo = Math.max(this.log.applied, this.bootstrapIndex) + 1;
    if (this.log.committed < lo) return false;
    const hi = this.log.committed + 1;
    while (lo < hi) {
      let ents: RaftEntry[];
      try {
        ents = this.log.slice(lo, hi, this.maxCommittedSizePerReady);
      } catch {
        return false;
      }
      for (const e of ents) if (e.type === 'conf') return true;
      lo += ents.length;
    }
    return false;
  }

  private campaign(kind: 'preElection' | 'election' | 'transfer'): void {
    let term: number;
    let type: 'vote' | 'preVote';
    if (kind === 'preElection') {
      this.becomePreCandidate();
      type = 'preVote';
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      type = 'vote';
      term = this.term;
    }
    if (this.poll(this.id, true) === 'won') {
      if (kind === 'preElection') this.campaign('election');
      else this.becomeLeader();
      return;
    }
    const logTerm = this.log.lastTerm();
    const index = this.log.lastIndex();
    for (const v of [...this.voters].sort()) {
      if (v === this.id) continue;
      this.send({ type, from: this.id, to: v, term, logTerm, index, transfer: kind === 'transfer' });
    }
  }

  private poll(from: PeerId, granted: boolean): 'won' | 'lost' | 'pending' {
    if (!this.votes.has(from) && this.voters.has(from)) this.votes.set(from, granted);
    let yes = 0;
    let no = 0;
    for (const [id, g] of this.votes) {
      if (!this.voters.has(id)) continue;
      if (g) yes++;
      else no++;
    }
    const q = this.quorum();
    if (yes >= q) return 'won';
    if (no > this.voters.size - q) return 'lost';
    return 'pending';
  }

  // ---- step ------------------------------------------------------------------

  step(m: Message): void {
    if (m.term === 0) {
      // Forwarded requests (prop, readIndex, transferLeader) carry no term.
    } else if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        // Leader stickiness: a node that hears from a live leader ignores campaigns (§6 of the thesis).
        if (!m.transfer && this.leaderSticky()) return;
      }
      if (m.type === 'preVote') {
        // A pre-vote never changes our term.
      } else if (m.type === 'preVoteResp' && !m.reject) {
        // Granted pre-votes carry the future term; the term moves only on winning.
      } else {
        const lead = m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap' ? m.from : NONE;
        this.becomeFollower(m.term, lead);
      }
    } else if (m.term < this.term) {
      if ((this.checkQuorum || this.preVote) && (m.type === 'heartbeat' || m.type === 'app' || m.type === 'snap')) {
        // A stale leader cut off by a partition learns our term and steps down.
        this.send({
          type: 'appResp',
          from: this.id,
          to: m.from,
          term: this.term,
          index: 0,
          reject: false,
          rejectHint: 0,
          logTerm: 0,
        });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResp', from: this.id, to: m.from, term: this.term, reject: true });
      }
      return;
    }

    if (m.type === 'vote' || m.type === 'preVote') {
      this.handleVote(m);
      return;
    }
    switch (this.state) {
      case 'follower':
        this.stepFollower(m);
        break;
      case 'preCandidate':
      case 'candidate':
        this.stepCandidate(m);
        break;
      case 'leader':
        this.stepLeader(m);
        break;
    }
  }

  private handleVote(m: VoteMessage): void {
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (m.type === 'preVote' && m.term > this.term);
    const respType = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      this.send({ type: respType, from: this.id, to: m.from, term: m.term, reject: false });
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send({ type: respType, from: this.id, to: m.from, term: this.term, reject: true });
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'prop':
        if (this.lead !== NONE && this.forwardProposals) this.send({ ...m, from: this.id, to: this.lead, term: 0 });
        break;
      case 'app':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        break;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        break;
      case 'snap':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapChunk(m);
        break;
      case 'transferLeader':
        // Forwarded again in our own name: a message only ever speaks for its sender.
        if (this.lead !== NONE) this.send({ ...m, from: this.id, to: this.lead, term: 0 });
        break;
      case 'timeoutNow':
        this.hup(true);
        break;
      case 'readIndex':
        // A peer took us for the leader. The answer must reach that peer, and a
        // message only ever speaks for its sender, so a read travels one hop:
        // it is dropped here and the peer retries once it learns the leader.
        break;
      case 'readIndexResp':
        this.readStates.push({ index: m.index, context: m.context });
        break;
      default:
        break;
    }
  }

  private stepCandidate(m: Message): void {
    switch (m.type) {
      case 'app':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        break;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        break;
      case 'snap':
        this.becomeFollower(m.term, m.from);
        this.handleSnapChunk(m);
        break;
      case 'voteResp':
      case 'preVoteResp': {
        const expected = this.state === 'preCandidate' ? 'preVoteResp' : 'voteResp';
        if (m.type !== expected) break;
        const result = this.poll(m.from, !m.reject);
        if (result === 'won') {
          if (this.state === 'preCandidate') this.campaign('election');
          else this.becomeLeader();
        } else if (result === 'lost') {
          this.becomeFollower(this.term, NONE);
        }
        break;
      }
      default:
        break;
    }
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case 'prop':
        if (this.leadTransferee !== NONE) return;
        try {
          this.appendProposal(m.entries);
        } catch {
          // Forwarded proposals that cannot be taken are dropped; the client retries.
        }
        return;
      case 'readIndex':
        this.leaderReadIndex(m.from, m.context);
        return;
      case 'transferLeader':
        this.leaderTransfer(m.transferee);
        return;
      default:
        break;
    }
    const pr = this.progress.get(m.from);
    if (!pr) return;
    switch (m.type) {
      case 'appResp':
        pr.recentActive = true;
        // An answer about an entry of this term (accepted or not) proves the peer
        // heard from us after we appended it (older entries have no mark: -Infinity).
        pr.ackedTick = Math.max(pr.ackedTick, this.appendTick(m.index));
        this.handleAppendResponse(m, pr);
        break;
      case 'heartbeatResp':
        this.handleHeartbeatResponse(m, pr);
        break;
      case 'snapResp':
        pr.recentActive = true;
        this.handleSnapResponse(m, pr);
        break;
      default:
        break;
    }
  }

  // ---- follower side of replication -----------------------------------------

  private handleAppend(m: AppMessage): void {
    if (m.index < this.log.committed) {
      this.sendAppResp(m.from, this.log.committed, false, 0, 0);
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== undefined) {
      this.sendAppResp(m.from, lastNew, false, 0, 0);
      return;
    }
    // Fast backtracking: point the leader at the last entry that may match.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.sendAppResp(m.from, m.index, true, hint.index, hint.term);
  }

  private sendAppResp(to: PeerId, index: number, reject: boolean, rejectHint: number, logTerm: number): void {
    this.send({ type: 'appResp', from: this.id, to, term: this.term, index, reject, rejectHint, logTerm });
  }

  private handleHeartbeat(m: HeartbeatMessage): void {
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    this.send({ type: 'heartbeatResp', from: this.id, to: m.from, term: this.term, context: m.context });
  }

  private handleSnapChunk(m: SnapMessage): void {
    const meta = m.meta;
    const reply = (offset: number) =>
      this.send({ type: 'snapResp', from: this.id, to: m.from, term: this.term, index: meta.index, offset });
    if (meta.index <= this.log.committed) {
      this.incoming = undefined;
      this.sendAppResp(m.from, this.log.committed, false, 0, 0);
      return;
    }
    if (m.totalBytes > this.maxSnapshotBytes || m.offset + m.data.byteLength > m.totalBytes) {
      this.incoming = undefined;
      return;
    }
    let inc = this.incoming;
    const same =
      inc !== undefined &&
      inc.from === m.from &&
      inc.snapshot.index === meta.index &&
      inc.snapshot.term === meta.term &&
      inc.totalBytes === m.totalBytes;
    if (!same) {
      if (m.offset !== 0) {
        this.incoming = undefined;
        reply(0);
        return;
      }
      inc = { from: m.from, snapshot: meta, totalBytes: m.totalBytes, receivedBytes: 0, chunks: [] };
      this.incoming = inc;
    }
    if (!inc) return;
    if (m.offset !== inc.receivedBytes) {
      reply(inc.receivedBytes);
      return;
    }
    inc.chunks.push(m.data.slice());
    inc.receivedBytes += m.data.byteLength;
    if (inc.receivedBytes < inc.totalBytes) {
      reply(inc.receivedBytes);
      return;
    }
    const data = new Uint8Array(inc.totalBytes);
    let at = 0;
    for (const c of inc.chunks) {
      data.set(c, at);
      at += c.byteLength;
    }
    this.incoming = undefined;
    const snap: RaftSnapshot = { meta, data };
    if (this.restore(snap)) this.sendAppResp(m.from, this.log.lastIndex(), false, 0, 0);
    else this.sendAppResp(m.from, this.log.committed, false, 0, 0);
  }

  /** Installs `snap` unless the log already covers it; returns true when the log was replaced. */
  restore(snap: RaftSnapshot): boolean {
    const meta = snap.meta;
    if (meta.index <= this.log.committed) return false;
    if (this.state !== 'follower') {
      return false; // unreachable: candidates and leaders become followers before a snapshot is handled
    }
    const cs = meta.confState;
    // A member added after the snapshot was taken is not in its confState yet:
    // it restores anyway and learns of itself from the entries that follow.
    if (this.log.matchTerm(meta.index, meta.term)) {
      // The log already has the snapshot's last entry: just fast-forward the commit.
      this.log.commitTo(meta.index);
      return false;
    }
    this.log.restore(snap);
    this.voters.clear();
    this.learners.clear();
    for (const v of cs.voters) this.voters.add(v);
    for (const l of cs.learners) if (!this.voters.has(l)) this.learners.add(l);
    this.progress = new Map();
    for (const id of [...this.voters, ...this.learners]) {
      this.progress.set(
        id,
        new Progress(meta.index + 1, this.learners.has(id), this.maxInflightMsgs, this.maxInflightBytes),
      );
    }
    return true;
  }

  // ---- leader side of replication -------------------------------------------

  private appendEntries(ents: RaftEntry[]): ProposalResult {
    let index = this.log.lastIndex();
    const out: RaftEntry[] = new Array(ents.length);
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i] as RaftEntry;
      out[i] = { term: this.term, index: ++index, type: e.type, data: e.data };
    }
    this.log.append(out);
    this.appendAll = true;
    // A single-voter leader commits as soon as the entries are persisted (see advance()).
    return { index, term: this.term };
  }

  /** Leader-only: validates and appends proposed entries; throws on refusal. */
  appendProposal(ents: RaftEntry[]): ProposalResult {
    if (this.state !== 'leader') throw new NotLeaderError(this.lead || undefined);
    if (this.leadTransferee !== NONE) throw new NotLeaderError(this.leadTransferee);
    let bytes = 0;
    for (const e of ents) bytes += e.data.byteLength;
    if (this.uncommittedBytes > 0 && this.uncommittedBytes + bytes > this.maxUncommittedBytes) {
      throw new UnavailableError('raft: too many uncommitted bytes', { uncommittedBytes: this.uncommittedBytes });
    }
    let confAt = -1;
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i] as RaftEntry;
      if (e.type !== 'conf') continue;
      if (confAt >= 0 || this.pendingConfIndex > this.log.applied) {
        throw new UnavailableError('raft: a configuration change is still pending');
      }
      this.validateConfChange(decodeConfChange(e.data));
      confAt = i;
    }
    const res = this.appendEntries(ents);
    if (confAt >= 0) this.pendingConfIndex = res.index - ents.length + 1 + confAt;
    this.uncommittedBytes += bytes;
    return res;
  }

  private validateConfChange(cc: ConfChange): void {
    if (cc.type === 'removeNode' || cc.type === 'addLearner') {
      if (this.voters.has(cc.node) && this.voters.size === 1) {
        throw new InvalidArgumentError('raft: cannot remove the last voter', { node: cc.node });
      }
    }
  }

  /** Sends pending appends, batching everything proposed since the last flush. */
  flush(): void {
    if (this.state !== 'leader') {
      this.dirty.clear();
      this.appendAll = false;
      this.commitAll = false;
      return;
    }
    if (this.appendAll || this.commitAll) {
      const force = this.commitAll;
      this.appendAll = false;
      this.commitAll = false;
      // Map order is insertion order: deterministic on every run.
      for (const to of this.progress.keys()) {
        if (to === this.id) continue;
        let ifEmpty = force || this.dirty.get(to) === true;
        this.dirty.delete(to);
        while (this.maybeSendAppend(to, ifEmpty)) ifEmpty = false;
      }
    }
    if (this.dirty.size === 0) return;
    const peers = [...this.dirty];
    this.dirty.clear();
    for (const [to, sendIfEmpty] of peers) {
      let ifEmpty = sendIfEmpty;
      while (this.maybeSendAppend(to, ifEmpty)) ifEmpty = false;
    }
  }

  private bcastCommit(): void {
    this.commitAll = true;
  }

  /** Sends one append to `to` if the window allows; returns whether a message went out. */
  private maybeSendAppend(to: PeerId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (!pr || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const last = this.log.lastIndex();
    let prevTerm: number;
    let ents: RaftEntry[] = [];
    try {
      prevTerm = this.log.term(prevIndex);
      if (pr.next <= last) ents = this.log.slice(pr.next, last + 1, this.maxSizePerMsg);
    } catch {
      // The entries the follower needs are compacted: install the snapshot instead.
      return this.sendSnapshot(to, pr);
    }
    if (ents.length === 0 && !sendIfEmpty && pr.sentCommit >= this.log.committed) return false;
    let bytes = 0;
    for (const e of ents) bytes += entryBytes(e);
    const commit = this.log.committed;
    this.send({
      type: 'app',
      from: this.id,
      to,
      term: this.term,
      logTerm: prevTerm,
      index: prevIndex,
      entries: ents,
      commit,
    });
    pr.sentEntries(ents.length, prevIndex + ents.length, bytes);
    pr.sentCommit = Math.max(pr.sentCommit, commit);
    return ents.length > 0;
  }

  private sendSnapshot(to: PeerId, pr: Progress): boolean {
    if (!pr.recentActive) return false; // do not ship a snapshot into the void
    const snap = this.log.snapshot();
    if (snap.meta.index === 0) return false;
    pr.becomeSnapshot(snap.meta.index);
    this.sendSnapChunk(to, pr);
    return false;
  }

  private sendSnapChunk(to: PeerId, pr: Progress): void {
    const snap = this.log.snapshot();
    if (snap.meta.index !== pr.pendingSnapshot) {
      if (snap.meta.index === 0) return;
      pr.becomeSnapshot(snap.meta.index); // a newer snapshot replaced the one in transfer
    }
    const total = snap.data.byteLength;
    const offset = Math.min(pr.snapshotOffset, total);
    const end = Math.min(total, offset + this.maxSnapshotChunk);
    this.send({
      type: 'snap',
      from: this.id,
      to,
      term: this.term,
      meta: snap.meta,
      offset,
      totalBytes: total,
      data: snap.data.subarray(offset, end),
    });
    pr.snapshotAcked = false;
  }

  private handleSnapResponse(m: SnapRespMessage, pr: Progress): void {
    if (pr.state !== 'snapshot' || m.index !== pr.pendingSnapshot) return;
    pr.snapshotAcked = true;
    pr.snapshotOffset = m.offset;
    if (m.offset < this.log.snapshot().data.byteLength) this.sendSnapChunk(m.from, pr);
  }

  private handleAppendResponse(m: AppRespMessage, pr: Progress): void {
    if (m.reject) {
      let nextProbe = m.rejectHint;
      if (m.logTerm > 0) nextProbe = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.dirty.set(m.from, this.dirty.get(m.from) ?? false);
      }
      return;
    }
    if (pr.state === 'snapshot' && m.index < pr.pendingSnapshot && m.index >= pr.match) {
      // The follower finished (or refused) the snapshot without reaching it: probe again.
      pr.maybeUpdate(m.index);
      pr.becomeProbe();
      this.dirty.set(m.from, this.dirty.get(m.from) ?? false);
      return;
    }
    const wasPaused = pr.isPaused();
    if (pr.maybeUpdate(m.index) || (pr.match === m.index && pr.state === 'probe')) {
      if (pr.state === 'probe') pr.becomeReplicate();
      else if (pr.state === 'snapshot' && pr.match + 1 >= this.log.firstIndex()) {
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (pr.state === 'replicate') pr.inflights.freeLE(m.index);
      if (this.maybeCommit()) this.bcastCommit();
      else if (wasPaused) this.dirty.set(m.from, this.dirty.get(m.from) ?? false);
      this.dirty.set(m.from, this.dirty.get(m.from) ?? false);
      if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
    }
  }

  private handleHeartbeatResponse(m: HeartbeatRespMessage, pr: Progress): void {
    pr.recentActive = true;
    pr.probeSent = false;
    if (pr.state === 'snapshot') {
      if (!pr.snapshotAcked) this.sendSnapChunk(m.from, pr); // retransmit a lost chunk
      pr.snapshotAcked = false;
    } else if (pr.match < this.log.lastIndex() || pr.sentCommit < this.log.committed) {
      // A full window with a live follower means an append was lost: free a
      // slot so the next append reveals the gap (the follower rejects it).
      if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
      this.dirty.set(m.from, true);
    }
    if (m.context.byteLength === 0) return;
    const key = ctxKey(m.context);
    const req = this.pendingReads.get(key);
    if (!req) return;
    // The echo proves the peer heard a heartbeat sent at or after the read's first round.
    pr.ackedTick = Math.max(pr.ackedTick, req.sentTick);
    req.acks.add(m.from);
    let acks = 0;
    for (const a of req.acks) if (this.voters.has(a)) acks++;
    if (acks < this.quorum()) return;
    // Every read queued up to and including this one is confirmed.
    while (this.readQueue.length > 0) {
      const k = this.readQueue.shift() as string;
      const r = this.pendingReads.get(k);
      this.pendingReads.delete(k);
      if (r) this.respondRead(r.from, r.index, r.context);
      if (k === key) break;
    }
  }

  /** Commit by counting replicas, only for entries of the current term (§5.4.2). */
  maybeCommit(): boolean {
    const matches: number[] = [];
    for (const v of this.voters) matches.push(this.progress.get(v)?.match ?? 0);
    if (matches.length === 0) return false;
    matches.sort((a, b) => b - a);
    const mci = matches[this.quorum() - 1] as number;
    const before = this.log.committed;
    if (!this.log.maybeCommit(mci, this.term)) return false;
    if (before < this.log.committed && this.pendingReadIndex.length > 0 && this.committedEntryInCurrentTerm()) {
      const pending = this.pendingReadIndex;
      this.pendingReadIndex = [];
      for (const r of pending) this.leaderReadIndex(r.from, r.context);
    }
    return true;
  }

  private bcastHeartbeat(): void {
    const ctx =
      this.readQueue.length > 0
        ? this.pendingReads.get(this.readQueue[this.readQueue.length - 1] as string)
        : undefined;
    const context = ctx?.context ?? EMPTY;
    for (const [id, pr] of [...this.progress].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (id === this.id) continue;
      const commit = Math.min(pr.match, this.log.committed);
      this.send({ type: 'heartbeat', from: this.id, to: id, term: this.term, commit, context });
    }
  }

  private sendTimeoutNow(to: PeerId): void {
    this.timeoutNowSent = true;
    this.send({ type: 'timeoutNow', from: this.id, to, term: this.term });
  }

  // ---- reads -------------------------------------------------------------------

  committedEntryInCurrentTerm(): boolean {
    return this.log.maybeTerm(this.log.committed) === this.term;
  }

  /**
   * ReadIndex (§6.4 of the thesis): record the commit index, then confirm
   * leadership; with lease reads, answer at once while the lease holds.
   * `allowLease` false forces the heartbeat round (the caller's ticks lag).
   */
  leaderReadIndex(from: PeerId, context: Uint8Array, allowLease = true): void {
    if (this.voters.size === 1 && this.voters.has(this.id)) {
      this.respondRead(from, this.log.committed, context);
      return;
    }
    if (!this.committedEntryInCurrentTerm()) {
      // The commit index is not known to be current until this term's first entry commits.
      if (this.pendingReadIndex.length < this.maxPendingReads) this.pendingReadIndex.push({ from, context });
      return;
    }
    if (this.readOnlyOption === 'leaseBased' && allowLease && this.leaseValid()) {
      this.respondRead(from, this.log.committed, context);
      return;
    }
    const key = ctxKey(context);
    if (this.pendingReads.has(key)) return;
    if (this.readQueue.length >= this.maxPendingReads) return;
    this.pendingReads.set(key, {
      index: this.log.committed,
      from,
      context,
      acks: new Set([this.id]),
      sentTick: this.ticks,
    });
    this.readQueue.push(key);
    this.bcastHeartbeat();
  }

  /**
   * The lease: no transfer is pending or was attempted this term (a transferee
   * campaigns past stickiness), and a quorum of voters, counting this leader,
   * heard from it less than `leaseTicks` ago. Each of them then refuses
   * votes for at least the rest of the lease (leader stickiness), so no other
   * leader can be elected before it ends while tick rates stay within the margin.
   */
  leaseValid(): boolean {
    if (this.state !== 'leader' || this.leadTransferee !== NONE || this.timeoutNowSent) return false;
    const horizon = this.ticks - this.leaseTicks;
    let fresh = 0;
    for (const v of this.voters) {
      if (v === this.id) fresh++;
      else if ((this.progress.get(v)?.ackedTick ?? Number.NEGATIVE_INFINITY) > horizon) fresh++;
    }
    return fresh >= this.quorum();
  }

  private respondRead(from: PeerId, index: number, context: Uint8Array): void {
    if (from === this.id || from === NONE) this.readStates.push({ index, context });
    else this.send({ type: 'readIndexResp', from: this.id, to: from, term: this.term, index, context });
  }

  pendingReadCount(): number {
    return this.readQueue.length + this.pendingReadIndex.length;
  }

  // ---- leadership transfer ------------------------------------------------------

  leaderTransfer(transferee: PeerId): void {
    if (transferee === this.id || !this.voters.has(transferee)) return;
    if (this.leadTransferee === transferee) return;
    this.leadTransferee = transferee;
    this.electionElapsed = 0; // the transfer must finish within one election timeout
    const pr = this.progress.get(transferee);
    if (!pr) return;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(transferee);
    else this.dirty.set(transferee, this.dirty.get(transferee) ?? false);
  }

  // ---- membership -----------------------------------------------------------------

  /** Applies a committed conf change (called by the application when it applies the entry). */
  applyConfChange(cc: ConfChange): ConfState {
    const node = cc.node;
    switch (cc.type) {
      case 'addVoter':
        this.learners.delete(node);
        this.voters.add(node);
        break;
      case 'addLearner':
        if (this.voters.has(node) && this.voters.size === 1) break; // never drop the last voter
        this.voters.delete(node);
        this.learners.add(node);
        break;
      case 'removeNode':
        if (this.voters.has(node) && this.voters.size === 1) break;
        this.voters.delete(node);
        this.learners.delete(node);
        break;
    }
    const member = this.voters.has(node) || this.learners.has(node);
    if (!member) this.progress.delete(node);
    else {
      const pr = this.progress.get(node);
      if (pr) pr.learner = this.learners.has(node);
      else {
        const np = new Progress(
          this.log.lastIndex() + 1,
          this.learners.has(node),
          this.maxInflightMsgs,
          this.maxInflightBytes,
        );
        np.recentActive = true;
        this.progress.set(node, np);
        if (this.state === 'leader') this.dirty.set(node, true);
      }
    }
    if (this.state === 'leader') {
      if (!this.voters.has(this.id)) {
        // A leader that is no longer a voter steps down; the others elect a successor.
        this.becomeFollower(this.term, NONE);
      } else {
        if (this.leadTransferee !== NONE && !this.voters.has(this.leadTransferee)) this.leadTransferee = NONE;
        if (this.maybeCommit()) this.bcastCommit();
      }
    }
    return this.confState();
  }

  // ---- inspection ------------------------------------------------------------------

  status(): Status {
    let progress: Status['progress'];
    if (this.state === 'leader') {
      progress = {};
      for (const [id, pr] of [...this.progress].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
        progress[id] = {
          match: pr.match,
          next: pr.next,
          state: pr.state,
          learner: pr.learner,
          recentActive: pr.recentActive,
          inflight: pr.inflights.count,
        };
      }
    }
    const cs = this.confState();
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      commit: this.log.committed,
      applied: this.log.applied,
      lead: this.lead,
      state: this.state,
      leadTransferee: this.leadTransferee,
      voters: cs.voters,
      learners: cs.learners,
      progress,
    };
  }

  /** Self-acknowledges entries persisted by the application (leader's own vote in the commit count). */
  onStable(): void {
    if (this.state !== 'leader') return;
    const self = this.progress.get(this.id);
    if (self?.maybeUpdate(this.log.stableIndex()) && this.maybeCommit()) this.bcastCommit();
  }

  reportUnreachable(peer: PeerId): void {
    if (this.state !== 'leader') return;
    const pr = this.progress.get(peer);
    if (pr && pr.state === 'replicate') pr.becomeProbe();
  }
}
