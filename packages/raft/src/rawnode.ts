import {
  type ConfState,
  type HardState,
  NotLeaderError,
  type PeerId,
  type RaftEntry,
  UnavailableError,
} from '@parley/interface';
import { encodeConfChange } from './confchange.js';
import { RaftProbe } from './probe.js';
import { type ProposalResult, Raft, type RaftConfig } from './raft.js';
import { type ConfChange, type Message, NONE, type Ready, type SoftState, type Status } from './types.js';

/** Messages that attest to durable state: they may leave only after the Ready is persisted. */
const AFTER_PERSIST = new Set<Message['type']>(['appResp', 'voteResp', 'preVoteResp', 'snapResp', 'heartbeatResp']);

/**
 * The application's handle on one Raft member. Everything is synchronous and
 * deterministic; the caller owns the clock (`tick`), the network (`step`,
 * `Ready.messages`) and the disk (`Ready.entries`/`hardState`/`snapshot`).
 */
export class RawNode {
  readonly raft: Raft;
  /** A read-only view of the member's state (the simulator's directors and checks read it). */
  readonly probe: RaftProbe;
  private prevSoft: SoftState;
  private prevHard: HardState;
  private pending: Ready | undefined;

  constructor(config: RaftConfig) {
    this.raft = new Raft(config);
    this.probe = new RaftProbe(this.raft);
    this.prevSoft = { lead: this.raft.lead, state: this.raft.state };
    this.prevHard = this.raft.log.storage.initialState().hardState;
  }

  get id(): PeerId {
    return this.raft.id;
  }

  tick(): void {
    this.raft.tick();
  }

  /**
   * Starts an election now (pre-vote first when enabled). With lease reads it
   * is ignored while this node is sticky to a live leader (see
   * `Raft.leaderSticky`): its campaign would bypass the promise that lease
   * rests on. Use `transferLeader` to move leadership instead.
   */
  campaign(): void {
    const r = this.raft;
    if (r.readOnlyOption === 'leaseBased' && r.state !== 'leader' && r.leaderSticky()) return;
    r.hup(false);
  }

  step(m: Message): void {
    if (m.to !== this.raft.id) return;
    this.raft.step(m);
  }

  /**
   * Proposes `data`. On the leader returns the entry's (index, term); on a
   * follower forwards it to the leader and returns undefined (it may be lost:
   * retry with a client session). Throws NotLeaderError (with the leader hint
   * when known) when it cannot be forwarded, UnavailableError when the leader
   * is overloaded.
   */
  propose(data: Uint8Array): ProposalResult | undefined {
    return this.proposeEntries([{ term: 0, index: 0, type: 'normal', data }]);
  }

  /** Proposes a one-server membership change (see `applyConfChange`). */
  proposeConfChange(cc: ConfChange): ProposalResult | undefined {
    return this.proposeEntries([{ term: 0, index: 0, type: 'conf', data: encodeConfChange(cc) }]);
  }

  private proposeEntries(entries: RaftEntry[]): ProposalResult | undefined {
    const r = this.raft;
    if (r.state === 'leader') return r.appendProposal(entries);
    if (r.lead === NONE || !r.forwardProposals) throw new NotLeaderError(r.lead || undefined);
    r.msgs.push({ type: 'prop', from: r.id, to: r.lead, term: 0, entries });
    return undefined;
  }

  /**
   * Requests a linearizable read point for `context` (unique per request).
   * The answer arrives as a ReadState in a later Ready. `allowLease: false`
   * makes a lease-reading leader confirm with a heartbeat round anyway (its
   * caller knows ticks are due that the core has not seen yet).
   */
  readIndex(context: Uint8Array, opts: { allowLease?: boolean } = {}): void {
    const r = this.raft;
    if (r.state === 'leader') {
      if (r.pendingReadCount() >= r.maxPendingReads) throw new UnavailableError('raft: too many pending reads');
      r.leaderReadIndex(r.id, context, opts.allowLease ?? true);
      return;
    }
    if (r.lead === NONE) throw new NotLeaderError();
    r.msgs.push({ type: 'readIndex', from: r.id, to: r.lead, term: 0, context });
  }

  /** Asks the leader to hand leadership to `transferee` (sent with TimeoutNow once caught up). */
  transferLeader(transferee: PeerId): void {
    const r = this.raft;
    if (r.state === 'leader') r.leaderTransfer(transferee);
    else if (r.lead !== NONE) r.msgs.push({ type: 'transferLeader', from: r.id, to: r.lead, term: 0, transferee });
    else throw new NotLeaderError();
  }

  /** Applies a committed conf change; call it when applying the `conf` entry. */
  applyConfChange(cc: ConfChange): ConfState {
    return this.raft.applyConfChange(cc);
  }

  /** The leader should probe `peer` again (e.g. its connection dropped). */
  reportUnreachable(peer: PeerId): void {
    this.raft.reportUnreachable(peer);
  }

  /** The connection to `peer` closed (see `Raft.leaderDisconnected`). */
  reportDisconnect(peer: PeerId): void {
    this.raft.leaderDisconnected(peer);
  }

  status(): Status {
    return this.raft.status();
  }

  hasReady(): boolean {
    const r = this.raft;
    r.flush();
    if (r.msgs.length > 0 || r.readStates.length > 0) return true;
    if (r.log.unstable.length > 0 || r.log.unstableSnapshot) return true;
    if (r.lead !== this.prevSoft.lead || r.state !== this.prevSoft.state) return true;
    const hs = this.prevHard;
    if (r.term !== hs.term || r.vote !== hs.vote || r.log.committed !== hs.commit) return true;
    return r.log.hasNextCommittedEntries();
  }

  /** Collects the pending work; call `advance()` once it is done. */
  ready(): Ready {
    if (this.pending) throw new Error('raft: ready() called twice without advance()');
    const r = this.raft;
    r.flush();
    const hs = r.hardState();
    const hardChanged = hs.term !== this.prevHard.term || hs.vote !== this.prevHard.vote;
    const soft = { lead: r.lead, state: r.state };
    const messages: Message[] = [];
    const after: Message[] = [];
    for (const m of r.msgs) {
      if (hardChanged || AFTER_PERSIST.has(m.type)) after.push(m);
      else messages.push(m);
    }
    r.msgs = [];
    const entries = r.log.unstable.slice();
    const rd: Ready = {
      softState: soft.lead !== this.prevSoft.lead || soft.state !== this.prevSoft.state ? soft : undefined,
      hardState: hardChanged || hs.commit !== this.prevHard.commit ? hs : undefined,
      entries,
      snapshot: r.log.unstableSnapshot,
      committedEntries: r.log.nextCommittedEntries(r.maxCommittedSizePerReady),
      messages,
      messagesAfterPersist: after,
      readStates: r.readStates,
      mustSync: hardChanged || entries.length > 0,
    };
    r.readStates = [];
    if (rd.softState) this.prevSoft = soft;
    this.pending = rd;
    return rd;
  }

  /** Acknowledges that the last Ready was persisted, sent and applied. */
  advance(): void {
    const rd = this.pending;
    if (!rd) return;
    this.pending = undefined;
    const r = this.raft;
    if (rd.hardState) this.prevHard = rd.hardState;
    if (rd.snapshot) {
      r.log.stableSnapTo(rd.snapshot.meta.index);
      if (rd.snapshot.meta.index > r.log.applied) r.log.applied = rd.snapshot.meta.index;
    }
    const lastEnt = rd.entries[rd.entries.length - 1];
    if (lastEnt) {
      r.log.stableTo(lastEnt.index, lastEnt.term);
      r.onStable();
    }
    const lastCommitted = rd.committedEntries[rd.committedEntries.length - 1];
    if (lastCommitted) {
      r.log.appliedTo(lastCommitted.index);
      if (r.state === 'leader') {
        let bytes = 0;
        for (const e of rd.committedEntries) bytes += e.data.byteLength;
        r.uncommittedBytes = Math.max(0, r.uncommittedBytes - bytes);
      }
    }
  }
}
