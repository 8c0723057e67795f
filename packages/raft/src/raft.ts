import {
  type ConfState,
  type HardState,
  InvalidArgumentError,
  NotLeaderError,
  type PeerId,
  type RaftEntry,
  type RaftSnapshot,
  type Random,
  UnavailableError,
} from '@parley/interface';
import { decodeConfChange } from './confchange.js';
import type { ProposalResult, RaftConfig } from './config.js';
import { hasUnappliedConfChanges, quorumOf, tallyVotes } from './election.js';
import { FAILOVER_ROUNDS, FAILOVER_STEP_TICKS, FailoverTimer, failoverTurn, KeptPreVotes } from './failover.js';
import { AppendMarks, leaseTicksFor, quorumAckedWithin } from './lease.js';
import { RaftLog } from './log.js';
import { applyToMembers, bootstrapEntries, describeProgress, validateConfChange } from './membership.js';
import { Progress } from './progress.js';
import { ReadOnlyQueue } from './readonly.js';
import { Replicator } from './replication.js';
import { SnapshotAssembler } from './snapshot-assembler.js';
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
  type StateType,
  type Status,
  type VoteMessage,
} from './types.js';

export type { ProposalResult, RaftConfig } from './config.js';

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
  private readonly appendMarks = new AppendMarks();
  /** Leader: a TimeoutNow went out this term, so stickiness no longer protects the lease. */
  private timeoutNowSent = false;
  /** Started from a persisted term (a restart, not a fresh member): see `leaderSticky`. */
  private readonly restarted: boolean;
  private readonly votes = new Map<PeerId, boolean>();
  /** Follower: early campaigns after the leader's connection closed (see `leaderDisconnected`). */
  private readonly failover = new FailoverTimer();
  /** The leader whose connection closed, while this member fails over from it (NONE otherwise). */
  private failoverFrom: PeerId = NONE;
  /** Pre-votes refused as sticky lately (kept only with failoverOnDisconnect). */
  private readonly keptPreVotes = new KeptPreVotes();
  private readonly readOnly = new ReadOnlyQueue();
  private pendingReadIndex: { from: PeerId; context: Uint8Array }[] = [];
  private readonly incoming = new SnapshotAssembler();
  private readonly repl: Replicator;

  readonly electionTimeout: number;
  readonly heartbeatTimeout: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  readonly readOnlyOption: ReadOnlyOption;
  /** Lease length in the leader's ticks (see RaftConfig.leaseDriftMarginTicks). */
  readonly leaseTicks: number;
  /** Campaign early when the connection to the leader closes (see RaftConfig.failoverOnDisconnect). */
  readonly failoverOnDisconnect: boolean;
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
    if (this.readOnlyOption === 'leaseBased' && cfg.failoverOnDisconnect === true) {
      throw new InvalidArgumentError('raft: failoverOnDisconnect would break leaseBased reads');
    }
    this.failoverOnDisconnect = cfg.failoverOnDisconnect ?? this.readOnlyOption !== 'leaseBased';
    const margin = cfg.leaseDriftMarginTicks ?? Math.ceil(this.electionTimeout / 5);
    this.leaseTicks = leaseTicksFor(this.electionTimeout, margin);
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
    this.repl = new Replicator({
      id: this.id,
      log: this.log,
      maxSizePerMsg: this.maxSizePerMsg,
      maxSnapshotChunk: this.maxSnapshotChunk,
      term: () => this.term,
      progress: () => this.progress,
      send: (m) => this.send(m),
    });
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
    const { changes, ents } = bootstrapEntries(voters, learners);
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
    return quorumOf(this.voters.size);
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
    this.failover.clear();
    this.failoverFrom = NONE;
    this.keptPreVotes.clear();
    this.appendMarks.clear();
    this.votes.clear();
    this.repl.clear();
    this.readOnly.clear();
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
    this.appendMarks.start(this.ticks, this.log.lastIndex());
    // An empty entry of the new term lets earlier-term entries commit (§5.4.2).
    this.appendEntries([{ term: 0, index: 0, type: 'normal', data: EMPTY }]);
  }

  // ---- time ----------------------------------------------------------------

  tick(): void {
    this.ticks++;
    if (this.state === 'leader') {
      this.appendMarks.mark(this.ticks, this.log.lastIndex(), this.leaseTicks);
      this.tickHeartbeat();
    } else this.tickElection();
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
    if (this.failover.tick()) {
      // Still no leader heard of since its connection closed: campaign early.
      if (this.lead === NONE) this.hup(false);
      else this.failover.clear();
      return;
    }
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

  /**
   * The connection to `peer` closed. A voter following `peer` forgets it: it
   * no longer refuses pre-votes as sticky to it, answers those it refused so
   * lately, and campaigns (pre-vote) on its turn among
   * the other voters (see ./failover.ts and RaftConfig.failoverOnDisconnect).
   * Hearing from a leader stops it.
   */
  leaderDisconnected(peer: PeerId): void {
    if (!this.failoverOnDisconnect || this.state !== 'follower' || peer === NONE || this.lead !== peer) return;
    // A learner, which never campaigns, keeps naming its leader until it hears from another.
    if (!this.promotable()) return;
    this.lead = NONE;
    this.failoverFrom = peer;
    let granted = false;
    for (const m of this.keptPreVotes.take(this.ticks)) {
      const before = this.msgs.length;
      this.step(m);
      granted ||= this.msgs.slice(before).some((r) => r.type === 'preVoteResp' && !r.reject);
    }
    if (this.state !== 'follower') return;
    const { turn, of } = failoverTurn(this.id, peer, this.voters);
    if (turn < 0) return;
    // A candidate this member just granted runs ahead: its own first turn waits a round.
    const period = of * FAILOVER_STEP_TICKS;
    const delay = turn * FAILOVER_STEP_TICKS + (granted ? period : 0);
    this.failover.arm(delay, period, FAILOVER_ROUNDS);
    // A pre-candidate keeps its turns armed (a pre-vote resets nothing).
    if (delay === 0) this.hup(false);
  }

  /**
   * Failing over, a pre-candidate refuses the pre-vote of a voter whose turn
   * comes after its own unless that voter's log is strictly more up to date:
   * of two campaigns that cross (ticks late under load, messages slow), only
   * the best by (last log term, last index, turn) wins its pre-vote, so the
   * votes that follow do not split.
   */
  private outranksInFailover(m: VoteMessage): boolean {
    if (this.state !== 'preCandidate' || this.failoverFrom === NONE) return false;
    const myTerm = this.log.lastTerm();
    const myIndex = this.log.lastIndex();
    if (m.logTerm > myTerm || (m.logTerm === myTerm && m.index > myIndex)) return false;
    const mine = failoverTurn(this.id, this.failoverFrom, this.voters).turn;
    const theirs = failoverTurn(m.from, this.failoverFrom, this.voters).turn;
    return mine >= 0 && theirs > mine;
  }

  /** Starts an election (pre-vote first when enabled) unless conf changes await application. */
  hup(transfer: boolean): void {
    if (this.state === 'leader' || !this.promotable()) return;
    if (
      hasUnappliedConfChanges(this.log, Math.max(this.log.applied, this.bootstrapIndex), this.maxCommittedSizePerReady)
    ) {
      return;
    }
    if (this.preVote && !transfer) this.campaign('preElection');
    else this.campaign(transfer ? 'transfer' : 'election');
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
    return tallyVotes(this.votes, this.voters);
  }

  // ---- step ------------------------------------------------------------------

  step(m: Message): void {
    if (m.term === 0) {
      // Forwarded requests (prop, readIndex, transferLeader) carry no term.
    } else if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        // Leader stickiness: a node that hears from a live leader ignores campaigns (§6 of the thesis).
        if (!m.transfer && this.leaderSticky()) {
          if (m.type === 'preVote' && this.failoverOnDisconnect && this.voters.has(m.from)) {
            this.keptPreVotes.keep(m, this.ticks);
          }
          return;
        }
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
      (this.vote === m.from ||
        (this.vote === NONE && this.lead === NONE) ||
        (m.type === 'preVote' && m.term > this.term)) &&
      !(m.type === 'preVote' && this.outranksInFailover(m));
    const respType = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      this.send({ type: respType, from: this.id, to: m.from, term: m.term, reject: false });
      if (m.type === 'preVote') this.failover.postpone();
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
        pr.ackedTick = Math.max(pr.ackedTick, this.appendMarks.appendTick(m.index));
        this.handleAppendResponse(m, pr);
        break;
      case 'heartbeatResp':
        this.handleHeartbeatResponse(m, pr);
        break;
      case 'snapResp':
        pr.recentActive = true;
        this.repl.handleSnapResponse(m, pr);
        break;
      default:
        break;
    }
  }

  /** Sends pending appends, batching everything proposed since the last flush. */
  flush(): void {
    this.repl.flush(this.state === 'leader');
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
    if (meta.index <= this.log.committed) {
      this.incoming.reset();
      this.sendAppResp(m.from, this.log.committed, false, 0, 0);
      return;
    }
    const out = this.incoming.receive(m, this.maxSnapshotBytes);
    if (out.kind === 'reply') {
      this.send({
        type: 'snapResp',
        from: this.id,
        to: m.from,
        term: this.term,
        index: meta.index,
        offset: out.offset,
      });
    } else if (out.kind === 'complete') {
      if (this.restore(out.snapshot)) this.sendAppResp(m.from, this.log.lastIndex(), false, 0, 0);
      else this.sendAppResp(m.from, this.log.committed, false, 0, 0);
    }
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
    this.repl.bcastAppend();
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
      validateConfChange(decodeConfChange(e.data), this.voters);
      confAt = i;
    }
    const res = this.appendEntries(ents);
    if (confAt >= 0) this.pendingConfIndex = res.index - ents.length + 1 + confAt;
    this.uncommittedBytes += bytes;
    return res;
  }

  private handleAppendResponse(m: AppRespMessage, pr: Progress): void {
    if (m.reject) {
      let nextProbe = m.rejectHint;
      if (m.logTerm > 0) nextProbe = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.repl.owe(m.from);
      }
      return;
    }
    if (pr.state === 'snapshot' && m.index < pr.pendingSnapshot && m.index >= pr.match) {
      // The follower finished (or refused) the snapshot without reaching it: probe again.
      pr.maybeUpdate(m.index);
      pr.becomeProbe();
      this.repl.owe(m.from);
      return;
    }
    const wasPaused = pr.isPaused();
    if (pr.maybeUpdate(m.index) || (pr.match === m.index && pr.state === 'probe')) {
      if (pr.state === 'probe') pr.becomeReplicate();
      else if (pr.state === 'snapshot' && pr.match + 1 >= this.log.firstIndex()) {
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (pr.state === 'replicate') pr.inflights.freeLE(m.index);
      if (this.maybeCommit()) this.repl.bcastCommit();
      else if (wasPaused) this.repl.owe(m.from);
      this.repl.owe(m.from);
      if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
    }
  }

  private handleHeartbeatResponse(m: HeartbeatRespMessage, pr: Progress): void {
    pr.recentActive = true;
    pr.probeSent = false;
    if (pr.state === 'snapshot') {
      if (!pr.snapshotAcked) this.repl.sendSnapChunk(m.from, pr); // retransmit a lost chunk
      pr.snapshotAcked = false;
    } else if (pr.match < this.log.lastIndex() || pr.sentCommit < this.log.committed) {
      // A full window with a live follower means an append was lost: free a
      // slot so the next append reveals the gap (the follower rejects it).
      if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
      this.repl.owe(m.from, true);
    }
    if (m.context.byteLength === 0) return;
    const req = this.readOnly.get(m.context);
    if (!req) return;
    // The echo proves the peer heard a heartbeat sent at or after the read's first round.
    pr.ackedTick = Math.max(pr.ackedTick, req.sentTick);
    req.acks.add(m.from);
    let acks = 0;
    for (const a of req.acks) if (this.voters.has(a)) acks++;
    if (acks < this.quorum()) return;
    // Every read queued up to and including this one is confirmed.
    for (const r of this.readOnly.confirmThrough(m.context)) this.respondRead(r.from, r.index, r.context);
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
    const context = this.readOnly.lastContext() ?? EMPTY;
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
    const read = { index: this.log.committed, from, context, acks: new Set([this.id]), sentTick: this.ticks };
    if (this.readOnly.add(read, this.maxPendingReads)) this.bcastHeartbeat();
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
    return quorumAckedWithin(this.id, this.voters, this.progress, this.ticks, this.leaseTicks, this.quorum());
  }

  private respondRead(from: PeerId, index: number, context: Uint8Array): void {
    if (from === this.id || from === NONE) this.readStates.push({ index, context });
    else this.send({ type: 'readIndexResp', from: this.id, to: from, term: this.term, index, context });
  }

  pendingReadCount(): number {
    return this.readOnly.length + this.pendingReadIndex.length;
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
    else this.repl.owe(transferee);
  }

  // ---- membership -----------------------------------------------------------------

  /** Applies a committed conf change (called by the application when it applies the entry). */
  applyConfChange(cc: ConfChange): ConfState {
    const node = cc.node;
    applyToMembers(cc, this.voters, this.learners);
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
        if (this.state === 'leader') this.repl.owe(node, true);
      }
    }
    if (this.state === 'leader') {
      if (!this.voters.has(this.id)) {
        // A leader that is no longer a voter steps down; the others elect a successor.
        this.becomeFollower(this.term, NONE);
      } else {
        if (this.leadTransferee !== NONE && !this.voters.has(this.leadTransferee)) this.leadTransferee = NONE;
        if (this.maybeCommit()) this.repl.bcastCommit();
      }
    }
    return this.confState();
  }

  // ---- inspection ------------------------------------------------------------------

  status(): Status {
    const progress = this.state === 'leader' ? describeProgress(this.progress) : undefined;
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
    if (self?.maybeUpdate(this.log.stableIndex()) && this.maybeCommit()) this.repl.bcastCommit();
  }

  reportUnreachable(peer: PeerId): void {
    if (this.state !== 'leader') return;
    const pr = this.progress.get(peer);
    if (pr && pr.state === 'replicate') pr.becomeProbe();
  }
}
