import {
  type Cancel,
  type Clock,
  type ConfState,
  isParleyError,
  microtask,
  type PeerId,
  type RaftEntry,
  type RaftLogStorage,
  type RaftSnapshot,
  type Scheduler,
  type Transport,
} from '@parley/interface';
import { decodeMessage, encodeMessage } from './codec.js';
import { decodeConfChange } from './confchange.js';
import type { RaftProbe } from './probe.js';
import type { ProposalResult, RaftConfig } from './raft.js';
import { RawNode } from './rawnode.js';
import type { ConfChange, Message, ReadState, SoftState, Status } from './types.js';

/** The protocol Raft messages travel on, one way (`Transport.send`): Raft's own replies are messages too. */
export const RAFT_PROTOCOL = '/parley/raft/1';

const EMPTY = new Uint8Array(0);

export interface RaftStateMachine {
  /**
   * Applies committed entries in log order (normal and conf entries; the
   * driver has already applied conf entries to the membership). Awaited before
   * the next batch.
   */
  apply(entries: readonly RaftEntry[], confState: ConfState): void | Promise<void>;
  /** Replaces the whole state by a snapshot received from the leader. */
  restore(snapshot: RaftSnapshot): void | Promise<void>;
}

export interface RaftDriverOptions {
  /** Raft settings (the driver supplies `storage`). */
  raft: Omit<RaftConfig, 'storage'>;
  storage: RaftLogStorage;
  transport: Transport;
  scheduler: Scheduler;
  stateMachine: RaftStateMachine;
  /** Milliseconds per Raft tick. Default 100 (election timeout 10 ticks = 1–2 s). */
  tickMs?: number;
  /**
   * The process's clock (the node's, or a simulated host's). With it, a tick
   * timer that fires late — the process was paused, or its event loop was
   * busy — counts every tick period that passed (at most
   * `4 × electionTimeoutTicks` at once), and a lease read is refused while a
   * tick is overdue, so a leader that wakes from a pause neither serves a read
   * from its old lease nor keeps leading on stale answers. Without it, a late
   * timer counts as one tick (a pause is invisible to Raft's timing).
   */
  clock?: Clock;
  /** Inbound messages queued while a Ready is being handled; beyond it they are dropped. Default 4096. */
  maxInboxMessages?: number;
  /** Called with every ReadState (serve the read once `appliedIndex` ≥ its index). */
  onReadState?(rs: ReadState): void;
  /** Leader or role changes. */
  onSoftState?(ss: SoftState): void;
  /**
   * A fatal storage or state machine error: the driver has stopped, and this
   * member has stepped down (it reports itself a follower with no leader).
   */
  onError?(err: unknown): void;
}

/**
 * Runs the Ready loop of one RawNode over a Transport, a RaftLogStorage and a
 * Scheduler: persist (snapshot, entries, hard state in one synced save; none
 * when only the commit index moved), then send,
 * then apply, then advance. Inbound messages, ticks and send failures are
 * queued while a Ready is in progress and stepped between Readys, so the core
 * never sees input between `ready()` and `advance()`.
 */
export class RaftDriver {
  readonly node: RawNode;

  /** A read-only view of this member's Raft state. */
  get probe(): RaftProbe {
    return this.node.probe;
  }
  private readonly opts: RaftDriverOptions;
  private readonly tickMs: number;
  private readonly maxInbox: number;
  /** The most ticks one late firing of the tick timer counts. */
  private readonly maxCatchUpTicks: number;
  private inbox: Message[] = [];
  private pendingTicks = 0;
  /** With a clock: when the tick timer last fired. */
  private lastTickAtMs: number | undefined;
  /** Peers a message could not be sent to, reported to the core between Readys (bounded by the peers sent to). */
  private unreachable = new Set<PeerId>();
  /** Peers whose connection closed, reported to the core between Readys (bounded by the peers known). */
  private disconnected = new Set<PeerId>();
  private offDisconnect: (() => void) | undefined;
  private running = false;
  private scheduled = false;
  private stopped = true;
  private cancelTick: Cancel | undefined;
  /** Whether the tick timer runs: it pauses while this member leads a group of one (`alone`). */
  private ticking = false;
  /** Tick timer firings skipped because this member led alone (counts for tests and benchmarks). */
  pausedTicks = 0;
  private confState: ConfState;
  /** Index of the last entry (or snapshot) handed to the state machine. */
  appliedIndex: number;
  /** While `apply` runs: the last index of the batch it was handed. */
  private applyingThroughIndex: number | undefined;
  /** Messages dropped because the inbox was full or undecodable. */
  droppedMessages = 0;
  /** Outbound messages the transport refused (peer unreachable, stopped): dropped, the peer reported unreachable. */
  unsentMessages = 0;
  /** Readys not saved: only the commit index moved. */
  skippedSaves = 0;
  /** The commit index of the last hard state saved. */
  private savedCommit: number;
  /** The fatal error that stopped the driver (a failed save, a state machine that threw), if any. */
  fault: unknown;

  constructor(opts: RaftDriverOptions) {
    this.opts = opts;
    this.tickMs = opts.tickMs ?? 100;
    this.maxInbox = opts.maxInboxMessages ?? 4096;
    this.maxCatchUpTicks = 4 * (opts.raft.electionTimeoutTicks ?? 10);
    const snap = opts.storage.snapshot();
    this.appliedIndex = opts.raft.applied ?? snap.meta.index;
    this.node = new RawNode({ ...opts.raft, storage: opts.storage, applied: this.appliedIndex });
    this.confState = this.node.raft.confState();
    this.savedCommit = opts.storage.initialState().hardState.commit;
  }

  get id(): PeerId {
    return this.node.id;
  }

  /** Registers the message handler, starts ticking and processes the first Ready. */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.opts.transport.handle(RAFT_PROTOCOL, (from, bytes) => {
      this.receive(from, bytes);
      return EMPTY;
    });
    this.offDisconnect = this.opts.transport.on('peer:disconnect', (peer) => {
      if (this.stopped) return;
      this.disconnected.add(peer);
      this.kick();
    });
    this.resumeTicks();
    this.kick();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelTick?.();
    this.cancelTick = undefined;
    this.ticking = false;
    this.opts.transport.unhandle(RAFT_PROTOCOL);
    this.offDisconnect?.();
    this.offDisconnect = undefined;
    this.inbox = [];
    this.unreachable.clear();
    this.disconnected.clear();
  }

  status(): Status {
    return this.node.status();
  }

  currentConfState(): ConfState {
    return { voters: [...this.confState.voters], learners: [...this.confState.learners] };
  }

  /** See RawNode.propose: (index, term) on the leader, undefined when forwarded; throws not_leader. */
  propose(data: Uint8Array): ProposalResult | undefined {
    const r = this.node.propose(data);
    this.kick();
    return r;
  }

  proposeConfChange(cc: ConfChange): ProposalResult | undefined {
    this.resumeTicks();
    const r = this.node.proposeConfChange(cc);
    this.kick();
    return r;
  }

  /**
   * See RawNode.readIndex. While a tick is due that the core has not seen yet
   * (a Ready is in progress), a lease-reading leader confirms with a
   * heartbeat round instead of trusting its lease.
   */
  readIndex(context: Uint8Array): void {
    this.node.readIndex(context, { allowLease: this.pendingTicks === 0 && !this.tickOverdue() });
    this.kick();
  }

  /** Whether, by the clock, the tick timer should already have fired (the process was held up). */
  private tickOverdue(): boolean {
    if (!this.ticking || !this.opts.clock || this.lastTickAtMs === undefined) return false;
    return this.opts.clock.nowMs() - this.lastTickAtMs > this.tickMs;
  }

  /**
   * Ticks to count for one firing of the tick timer: one, or with a clock every
   * tick period since the previous firing (a timer held up by a pause fires
   * once, late), capped. A clock that stepped back counts one.
   */
  private dueTicks(): number {
    const clock = this.opts.clock;
    if (!clock) return 1;
    const now = clock.nowMs();
    const last = this.lastTickAtMs;
    this.lastTickAtMs = now;
    if (last === undefined || now - last < this.tickMs) return 1;
    return Math.min(Math.floor((now - last) / this.tickMs), this.maxCatchUpTicks);
  }

  transferLeader(to: PeerId): void {
    this.resumeTicks();
    this.node.transferLeader(to);
    this.kick();
  }

  campaign(): void {
    this.resumeTicks();
    this.node.campaign();
    this.kick();
  }

  /**
   * Records an application snapshot at the applied index and compacts the log,
   * keeping `keepEntries` entries before it for slow followers. Called from inside
   * the state machine's `apply`, it labels `data` with the last index of the batch
   * being applied, so `apply` must have applied the whole batch before calling it.
   */
  async createSnapshot(data: Uint8Array, keepEntries = 0): Promise<RaftSnapshot | undefined> {
    const storage = this.opts.storage;
    // From inside `apply`, the state machine's data already covers the batch being applied.
    const index = this.applyingThroughIndex ?? this.appliedIndex;
    if (index <= storage.snapshot().meta.index) return undefined;
    const snap = await storage.createSnapshot(index, this.currentConfState(), data);
    const compactTo = Math.max(index - keepEntries, storage.firstIndex() - 1);
    if (compactTo >= storage.firstIndex()) await storage.compact(compactTo);
    return snap;
  }

  private receive(from: PeerId, bytes: Uint8Array): void {
    if (this.stopped) return;
    let m: Message;
    try {
      m = decodeMessage(bytes);
    } catch (err) {
      if (!isParleyError(err, 'decode_error')) throw err;
      this.droppedMessages++;
      return;
    }
    // A peer may only speak for itself (forwarded requests keep their origin in `from`).
    if (m.from !== from || m.to !== this.id) {
      this.droppedMessages++;
      return;
    }
    if (this.inbox.length >= this.maxInbox) {
      this.droppedMessages++;
      return;
    }
    this.resumeTicks(); // someone else is in the group, or wants to be
    this.inbox.push(m);
    this.kick();
  }

  private scheduleTick(): void {
    this.cancelTick = this.opts.scheduler.after(this.tickMs, () => {
      if (this.stopped) return;
      this.pendingTicks += this.dueTicks();
      this.kick();
      if (this.alone()) {
        this.ticking = false;
        this.cancelTick = undefined;
        this.pausedTicks++;
        return;
      }
      this.scheduleTick();
    });
  }

  /**
   * A leader alone in its group (the only voter, no learners, no transfer under
   * way) has nothing to time: no one to send heartbeats to or hear from, a
   * quorum of itself, reads answered at once. Its tick timer pauses, so an idle
   * group of one wakes the process for nothing; anything that can change that
   * (a message from a peer, a membership change, a transfer, a campaign, a
   * Ready that leaves it not leading alone) resumes it.
   */
  private alone(): boolean {
    const r = this.node.raft;
    const cs = this.confState;
    return (
      r.state === 'leader' &&
      r.leadTransferee === '' &&
      cs.learners.length === 0 &&
      cs.voters.length === 1 &&
      cs.voters[0] === this.id
    );
  }

  /** Restarts the tick timer if it was paused; the paused time counts as no ticks (nothing was due). */
  private resumeTicks(): void {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    this.lastTickAtMs = this.opts.clock?.nowMs();
    this.scheduleTick();
  }

  /** Runs the loop soon (after the current call stack), once. */
  private kick(): void {
    if (this.stopped || this.running || this.scheduled) return;
    this.scheduled = true;
    microtask(this.runLoop);
  }

  private readonly runLoop = (): void => {
    this.scheduled = false;
    void this.loop();
  };

  private async loop(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    try {
      for (;;) {
        if (this.stopped) return;
        this.drainInput();
        if (!this.node.hasReady()) break;
        await this.handleReady();
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.running = false;
    }
    if (
      !this.stopped &&
      (this.inbox.length > 0 || this.pendingTicks > 0 || this.unreachable.size > 0 || this.disconnected.size > 0)
    ) {
      this.kick();
    }
  }

  /**
   * A save failed (or the state machine threw): this member can no longer
   * vouch for its log, so it leaves the group's service. It stops (no ticks,
   * no messages: the others elect a leader among themselves), and steps down
   * in memory (nothing more is persisted), so it names no leader — itself
   * least of all — and refuses proposals and reads with `not_leader`.
   */
  private fail(err: unknown): void {
    this.fault ??= err;
    this.stop();
    const raft = this.node.raft;
    if (raft.state !== 'follower' || raft.lead !== '') {
      raft.becomeFollower(raft.term, '');
      this.opts.onSoftState?.({ lead: '', state: 'follower' });
    }
    this.opts.onError?.(err);
  }

  private drainInput(): void {
    while (this.pendingTicks > 0) {
      this.pendingTicks--;
      this.node.tick();
    }
    const inbox = this.inbox;
    this.inbox = [];
    for (const m of inbox) this.node.step(m);
    if (this.unreachable.size > 0) {
      const peers = [...this.unreachable];
      this.unreachable.clear();
      for (const p of peers) this.node.reportUnreachable(p);
    }
    if (this.disconnected.size > 0) {
      const peers = [...this.disconnected];
      this.disconnected.clear();
      for (const p of peers) this.node.reportDisconnect(p);
    }
  }

  private async handleReady(): Promise<void> {
    const rd = this.node.ready();
    if (rd.softState) this.opts.onSoftState?.(rd.softState);
    // 1. Persist: snapshot, entries and hard state in one atomic save. It is synced unless only the
    // commit index moved (etcd's MustSync): a lost commit index is learned again from the quorum.
    // A Ready whose only change is the commit index is not saved at all: the commit index is
    // volatile state in Raft (a restarted member learns it again from the quorum, and one that
    // applied past it skips what it holds, below). The next save carries the current one along.
    for (const m of rd.messages) this.send(m); // allowed before the save (leader appends)
    if (rd.snapshot || rd.entries.length > 0 || (rd.hardState && rd.mustSync)) {
      const hardState =
        rd.hardState ?? (this.node.raft.log.committed > this.savedCommit ? this.node.raft.hardState() : undefined);
      await this.opts.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState, sync: true });
      if (hardState) this.savedCommit = hardState.commit;
    } else if (rd.hardState) this.skippedSaves++;
    if (this.stopped) return;
    // 2. Send what needed the save first.
    for (const m of rd.messagesAfterPersist) this.send(m);
    // 3. Apply.
    if (rd.snapshot) {
      await this.opts.stateMachine.restore(rd.snapshot);
      this.appliedIndex = rd.snapshot.meta.index;
      const cs = rd.snapshot.meta.confState;
      this.confState = { voters: [...cs.voters], learners: [...cs.learners] };
    }
    // After a crash lost an unsynced commit index, the core may hand out again entries the state
    // machine already holds (its snapshot is past the recovered commit index): skip them, conf
    // changes included, since the snapshot's membership already has them.
    const committed =
      rd.committedEntries.length > 0 && (rd.committedEntries[0] as RaftEntry).index <= this.appliedIndex
        ? rd.committedEntries.filter((e) => e.index > this.appliedIndex)
        : rd.committedEntries;
    if (committed.length > 0) {
      for (const e of committed) {
        if (e.type === 'conf') this.confState = this.node.applyConfChange(decodeConfChange(e.data));
      }
      const through = (committed[committed.length - 1] as RaftEntry).index;
      this.applyingThroughIndex = through;
      try {
        await this.opts.stateMachine.apply(committed, this.currentConfState());
      } finally {
        this.applyingThroughIndex = undefined;
      }
      this.appliedIndex = through;
    }
    for (const rs of rd.readStates) this.opts.onReadState?.(rs);
    // 4. Advance.
    this.node.advance();
    if (!this.ticking && !this.alone()) this.resumeTicks();
  }

  private send(m: Message): void {
    const to = m.to;
    // One way: Raft's answers are messages of their own, and a lost message is retransmitted.
    this.opts.transport.send(to, RAFT_PROTOCOL, encodeMessage(m)).then(
      () => {},
      () => {
        // Refused (the peer is unreachable now): dropped, and the leader probes the peer again.
        // The failure may land between ready() and advance(): queue it like input.
        this.unsentMessages++;
        if (this.stopped) return;
        this.unreachable.add(to);
        this.kick();
      },
    );
  }
}
