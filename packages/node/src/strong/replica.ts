/**
 * One member's copy of the strong state: @parley/raft's RaftDriver over the
 * node's transport, Raft log and scheduler, applying @parley/coord's
 * CoordStateMachine to every committed entry. It takes only seams
 * (`MemberSeams`: transport, Raft log, clock, scheduler, random, logger,
 * events), so the node's strong module and the simulator's `coord-*` hosts
 * run this one member.
 *
 * As leader it stamps each command with its clock and proposes it, answers
 * the proposer once the entry is applied (by the command's session and
 * sequence number: coord's session table is the only dedupe), serves reads
 * by ReadIndex, proposes `expire` after winning an election and, at most
 * every `expireEveryMs`, when something may be due. A leader that steps
 * down fails its pending proposals and reads at once with `not_leader` (the caller retries on the new leader; a
 * proposal that commits anyway is answered from the session table).
 * Snapshots of the coord state are taken every N entries or bytes and the
 * log is compacted behind them.
 */
import {
  type ApplyOutput,
  type Command,
  type CommandResult,
  CoordStateMachine,
  decodeCommand,
  encodeCommand,
  type Operation,
} from '@parley/coord';
import {
  type Cancel,
  isParleyError,
  NotLeaderError,
  type PeerId,
  type RaftEntry,
  type RaftSnapshot,
  TimeoutError,
  UnavailableError,
} from '@parley/interface';
import { type ConfChange, RaftDriver, type SoftState, type Status } from '@parley/raft';
import type { StrongChange } from '../api.js';
import type { NodeContext, NodeStorage } from '../context.js';
import { CasFastPath } from './cas-fast-path.js';
import { ChangeLog } from './changes.js';
import type { ResolvedStrongOptions } from './options.js';
import type { Pending } from './pending.js';

/** What a member takes from its process: seams only (a `NodeContext` is one). */
export type MemberSeams = Pick<
  NodeContext,
  'peerId' | 'transport' | 'clock' | 'scheduler' | 'random' | 'logger' | 'events'
> & {
  readonly storage: Pick<NodeStorage, 'raftLog'>;
};

/** The settings a member reads (the strong module passes its resolved options). */
export type MemberOptions = Pick<
  ResolvedStrongOptions,
  | 'voters'
  | 'learners'
  | 'tickMs'
  | 'electionTimeoutTicks'
  | 'heartbeatTicks'
  | 'leaseReads'
  | 'versionKey'
  | 'limits'
  | 'snapshotEveryEntries'
  | 'snapshotEveryBytes'
  | 'keepEntries'
  | 'expireEveryMs'
  | 'maxWatchHistory'
  | 'maxSnapshotChunkBytes'
> & {
  /** Answer a CAS that is sure to fail at a read point, without the log (default true). */
  readonly failFastCas?: boolean;
  /** Raft's failover on connection loss (default: Raft's, on unless `leaseReads`). */
  failoverOnDisconnect?: boolean;
  /** Raft's flow control: append messages in flight per follower, bytes per message (default: Raft's). */
  readonly maxInflightMsgs?: number;
  readonly maxSizePerMsgBytes?: number;
};

/** What a scenario or test may observe of every applied command (in log order). */
export interface ReplicaHooks {
  onApply?(index: number, term: number, command: Command | undefined, output: ApplyOutput): void;
  onRestore?(index: number): void;
  /** A read answered by `read`: `confirmMs` from its request to its read point (0: within the millisecond, the lease). */
  onReadServed?(confirmMs: number): void;
  /**
   * A CAS answered as failed with no log entry: at a read point, or held
   * behind a write that superseded its version (./cas-fast-path.ts).
   */
  onFailedFast?(command: Omit<Command, 'nowMs'>, result: CommandResult, how: 'read-point' | 'superseded'): void;
  /** A serializable or bounded read answered from this member's state, applied through `index`. */
  onLocalRead?(op: Operation, index: number, result: CommandResult): void;
}

/** Reads waiting for their read point or for the state machine to reach it, at most. */
export const MAX_PENDING_READS = 4096;

interface Waiter {
  resolve(r: CommandResult): void;
  reject(err: unknown): void;
  /** For register_session: the term the proposal was appended in. */
  term?: number;
  proposedAtMs: number;
}

interface PendingRead {
  /** Answers from the state (applied through `index`). */
  answer(): void;
  reject(err: unknown): void;
  index: number;
  requestedAtMs: number;
  confirmedAtMs: number;
}

export type { Pending } from './pending.js';

const LOCK_WAITING = 'lock_waiting';

export class StrongReplica {
  sm: CoordStateMachine;
  readonly driver: RaftDriver;
  readonly changes: ChangeLog;
  /** A storage or state machine error that stopped the driver. */
  fatal: unknown;
  /** Index of the last entry handed to the state machine (or restored from a snapshot). */
  appliedThrough: number;
  snapshotsTaken = 0;
  snapshotsRestored = 0;
  /** Namespaces that may hold entries (from snapshots and applied writes), for status. */
  readonly namespaceNames = new Set<string>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly regWaiters = new Map<number, Waiter>();
  private readonly reads = new Map<string, PendingRead>();
  /** The way of a CAS that is sure to fail, and its counters (./cas-fast-path.ts). */
  readonly fastPath: CasFastPath;
  private readyReads: PendingRead[] = [];
  private readonly applyListeners = new Set<() => void>();
  private readonly faultListeners = new Set<(err: unknown) => void>();
  /** Read states of ReadIndex rounds asked by `requestReadPoint` (./local-reads.ts), not by `read`. */
  private readPointListener: ((index: number, context: Uint8Array) => void) | undefined;
  private readCounter = 0;
  private leading = false;
  private leaderTerm = -1;
  /** When this member last proposed `expire` (its clock). */
  private lastExpireAtMs = Number.NEGATIVE_INFINITY;
  private lastSnapshotIndex: number;
  private bytesSinceSnapshot = 0;
  private snapshotting = false;
  private stopped = false;
  private cancelLoop: Cancel | undefined;

  constructor(
    private readonly ctx: MemberSeams,
    private readonly options: MemberOptions,
    private readonly hooks: ReplicaHooks = {},
  ) {
    const storage = ctx.storage.raftLog;
    this.sm = this.freshStateMachine();
    const snap = storage.snapshot();
    if (snap.data.byteLength > 0) {
      this.sm.restore(snap.data);
      this.learnNamespaces(snap.data);
    }
    this.lastSnapshotIndex = snap.meta.index;
    this.appliedThrough = snap.meta.index;
    this.changes = new ChangeLog(options.maxWatchHistory);
    this.fastPath = new CasFastPath(
      {
        sm: () => this.sm,
        requireLeader: () => this.requireLeader(),
        stampMs: () => this.stampMs(),
        proposedHere: (command) =>
          command.clientId !== undefined && this.waiters.has(`${command.clientId}/${command.seq}`),
        readsFull: () => this.reads.size + this.readyReads.length >= MAX_PENDING_READS,
        atReadPoint: (answer) => this.atReadPoint(answer),
        propose: (command) => this.propose(command),
        onFailedFast: (command, result, how) => hooks.onFailedFast?.(command, result, how),
      },
      options.failFastCas !== false,
    );
    this.changes.resetTo(snap.meta.index);
    const member = options.voters.includes(ctx.peerId) || options.learners.includes(ctx.peerId);
    this.driver = new RaftDriver({
      raft: {
        id: ctx.peerId,
        random: ctx.random,
        // A node outside the initial group starts with no membership and learns it when added.
        voters: member ? options.voters : [],
        learners: member ? options.learners : [],
        electionTimeoutTicks: options.electionTimeoutTicks,
        heartbeatTicks: options.heartbeatTicks,
        maxSnapshotChunkBytes: options.maxSnapshotChunkBytes,
        readOnly: options.leaseReads ? 'leaseBased' : 'safe',
        ...(options.failoverOnDisconnect === undefined ? {} : { failoverOnDisconnect: options.failoverOnDisconnect }),
        ...(options.maxInflightMsgs === undefined ? {} : { maxInflightMsgs: options.maxInflightMsgs }),
        ...(options.maxSizePerMsgBytes === undefined ? {} : { maxSizePerMsgBytes: options.maxSizePerMsgBytes }),
      },
      storage,
      transport: ctx.transport,
      scheduler: ctx.scheduler,
      clock: ctx.clock,
      tickMs: options.tickMs,
      stateMachine: {
        apply: (entries) => this.apply(entries),
        restore: (s) => this.restore(s),
      },
      onReadState: (rs) => this.onReadState(rs.index, rs.context),
      onSoftState: (ss) => this.onSoftState(ss),
      onError: (err) => {
        // The driver stopped and stepped down: this member is out of the group until restarted.
        this.fatal = err;
        const code = isParleyError(err) ? err.code : 'internal';
        this.ctx.logger.error(
          { err: String(err), code },
          code.startsWith('storage_')
            ? 'storage fault: the Raft log refuses writes; this member left the strong group until the node restarts'
            : 'strong: raft driver stopped; this member left the strong group until the node restarts',
        );
        if (code.startsWith('storage_')) this.ctx.events.emit('storage:fault', { store: 'raft', code });
        this.failAll(err);
        for (const listener of [...this.faultListeners]) listener(err);
      },
    });
  }

  private freshStateMachine(): CoordStateMachine {
    return new CoordStateMachine({ versionKey: this.options.versionKey, limits: this.options.limits });
  }

  async start(): Promise<void> {
    await this.driver.start();
    // A group of one need not wait out an election timeout.
    const st = this.driver.status();
    if (st.voters.length === 1 && st.voters[0] === this.ctx.peerId && st.state !== 'leader') this.driver.campaign();
    this.leaderLoop();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelLoop?.();
    this.driver.stop();
    this.failAll(new NotLeaderError());
  }

  status(): Status {
    return this.driver.status();
  }

  /** Calls `listener` once, when a fault stops the driver (this member leaves the group's service). */
  onFault(listener: (err: unknown) => void): () => void {
    this.faultListeners.add(listener);
    return () => this.faultListeners.delete(listener);
  }

  isLeader(): boolean {
    return !this.stopped && this.driver.probe.state === 'leader';
  }

  /** The leader this member knows of, if any. */
  leaderHint(): PeerId | undefined {
    const lead = this.driver.probe.lead;
    return lead === '' ? undefined : lead;
  }

  private requireLeader(): void {
    if (!this.isLeader()) throw refused(this.leaderHint());
  }

  /** Called after every applied batch (cluster changes wait on it). */
  onApplied(listener: () => void): () => void {
    this.applyListeners.add(listener);
    return () => this.applyListeners.delete(listener);
  }

  // ---------------------------------------------------------------- proposals

  /**
   * Leader only: stamps `command` with this node's clock, proposes it and
   * resolves with its result once applied. A blocking lock acquire resolves
   * with the grant or the wait's failure, not with `lock_waiting`. Throws
   * `not_leader` (with a hint) when this member does not lead.
   */
  submit(command: Omit<Command, 'nowMs'>, attempt: { retry?: boolean } = {}): Pending<CommandResult> {
    this.requireLeader();
    return this.fastPath.submit(command, attempt.retry === true);
  }

  /** Stamps `command` with this node's clock, proposes it and resolves with its result once applied. */
  private propose(command: Omit<Command, 'nowMs'>): Pending<CommandResult> {
    this.requireLeader();
    const bytes = encodeCommand({ ...command, nowMs: this.stampMs() });
    let waiter!: Waiter;
    const promise = new Promise<CommandResult>((resolve, reject) => {
      waiter = { resolve, reject, proposedAtMs: this.ctx.clock.nowMs() };
    });
    const isRegister = command.clientId === undefined && command.op.type === 'register_session';
    const key = command.clientId === undefined ? undefined : `${command.clientId}/${command.seq}`;
    if (key !== undefined) this.addWaiter(key, waiter);
    let pos: { index: number; term: number } | undefined;
    try {
      pos = this.driver.propose(bytes);
      if (pos === undefined) throw refused(this.leaderHint());
    } catch (err) {
      if (key !== undefined) this.removeWaiter(key, waiter);
      throw err;
    }
    this.fastPath.hold.noteProposed(pos.index, command.op);
    if (isRegister) {
      waiter.term = pos.term;
      this.regWaiters.set(pos.index, waiter);
    }
    const index = pos.index;
    return {
      promise,
      cancel: (err) => {
        if (key !== undefined) this.removeWaiter(key, waiter);
        if (isRegister && this.regWaiters.get(index) === waiter) this.regWaiters.delete(index);
        waiter.reject(err);
      },
    };
  }

  /** Leader only: a linearizable read by ReadIndex, answered from the state once applied through it. */
  read(op: Operation): Pending<CommandResult> {
    // Time of a read: the state machine's, moved up to this leader's clock (never back).
    return this.atReadPoint(() => this.sm.query(op, this.stampMs()));
  }

  /**
   * Leader only: `answer` run on this member's state once (1) Raft has
   * confirmed a read point — a ReadIndex round, which starts only after this
   * leader committed an entry of its term and then hears a heartbeat quorum
   * of that term (or holds a valid lease, with lease reads) — and (2) this
   * member has applied through it. The one rule of every linearizable answer
   * here: reads, and a CAS answered without the log (./cas-fast-path.ts). A leader
   * deposed meanwhile never confirms: its answer fails with `not_leader`.
   */
  private atReadPoint<T>(answer: () => T): Pending<T> {
    this.requireLeader();
    if (this.reads.size + this.readyReads.length >= MAX_PENDING_READS) {
      throw new UnavailableError(`${MAX_PENDING_READS} reads are waiting on this leader`, { unsent: true });
    }
    const context = new TextEncoder().encode(`${this.ctx.peerId}#${++this.readCounter}`);
    const key = ctxKey(context);
    let pending!: PendingRead;
    const promise = new Promise<T>((resolve, reject) => {
      const now = this.ctx.clock.nowMs();
      pending = { answer: () => resolve(answer()), reject, index: -1, requestedAtMs: now, confirmedAtMs: now };
    });
    this.reads.set(key, pending);
    try {
      this.driver.readIndex(context);
    } catch (err) {
      this.reads.delete(key);
      throw err;
    }
    return {
      promise,
      cancel: (err) => {
        this.reads.delete(key);
        this.readyReads = this.readyReads.filter((r) => r !== pending);
        pending.reject(err);
      },
    };
  }

  /**
   * Any member: asks its leader (or itself, leading) for a ReadIndex read
   * point under `context`; the answer comes to `onReadPoint`'s listener.
   * Throws `not_leader` when this member knows no leader.
   */
  requestReadPoint(context: Uint8Array): void {
    this.driver.readIndex(context);
  }

  /** Where the answers of `requestReadPoint` go (one listener). */
  onReadPoint(listener: (index: number, context: Uint8Array) => void): void {
    this.readPointListener = listener;
  }

  /**
   * Answers `op` from this member's applied state (no leader contact), at this
   * member's clock, never below state-machine time.
   */
  localQuery(op: Operation): CommandResult {
    const result = this.sm.query(op, this.stampMs());
    this.hooks.onLocalRead?.(op, this.appliedThrough, result);
    return result;
  }

  /** Leader only: proposes a membership change; resolves once it is applied here. */
  async changeMembership(cc: ConfChange, timeoutMs: number): Promise<void> {
    this.requireLeader();
    const pos = this.driver.proposeConfChange(cc);
    if (pos === undefined) throw refused(this.leaderHint());
    await this.waitApplied(pos.index, pos.term, timeoutMs);
  }

  /** Resolves once the entry at (index, term) is applied here; rejects when it was overwritten or on timeout. */
  waitApplied(index: number, term: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let off: () => void = () => {};
      const cancelTimer = this.ctx.scheduler.after(timeoutMs, () => {
        off();
        reject(new TimeoutError(`entry ${index} not applied within ${timeoutMs} ms`));
      });
      const check = () => {
        if (this.appliedThrough < index) return;
        off();
        cancelTimer();
        let t: number | undefined;
        try {
          t = this.ctx.storage.raftLog.term(index);
        } catch {
          t = undefined; // compacted: it was applied, and entries are never overwritten once applied
        }
        if (t !== undefined && t !== term) reject(new NotLeaderError(this.leaderHint()));
        else resolve();
      };
      off = this.onApplied(check);
      check();
    });
  }

  private stampMs(): number {
    return Math.max(0, Math.floor(this.ctx.clock.nowMs()));
  }

  private addWaiter(key: string, w: Waiter): void {
    let set = this.waiters.get(key);
    if (!set) this.waiters.set(key, (set = new Set()));
    set.add(w);
  }

  private removeWaiter(key: string, w: Waiter): void {
    const set = this.waiters.get(key);
    if (!set) return;
    set.delete(w);
    if (set.size === 0) this.waiters.delete(key);
  }

  private answer(key: string, result: CommandResult): void {
    if (result.ok && result.value.type === LOCK_WAITING) return; // the grant comes later, as a delivery
    const set = this.waiters.get(key);
    if (!set) return;
    this.waiters.delete(key);
    const now = this.ctx.clock.nowMs();
    for (const w of set) {
      this.ctx.events.emit('raft:commit', { ms: Math.max(0, now - w.proposedAtMs) });
      w.resolve(result);
    }
  }

  // ---------------------------------------------------------------- apply

  private apply(entries: readonly RaftEntry[]): void {
    const released: string[] = [];
    for (const e of entries) {
      const freed = this.fastPath.hold.applied(e.index);
      if (freed !== undefined) released.push(freed);
      if (e.type !== 'normal' || e.data.byteLength === 0) continue; // Raft's own entries carry no command
      const pos = { index: e.index, term: e.term };
      let command: Command | undefined;
      try {
        command = decodeCommand(e.data);
      } catch {
        command = undefined;
      }
      // A retry appended again is answered from the session table and changes nothing: it is no change.
      const repeat = command !== undefined && this.sm.isAnswered(command);
      const out = command ? this.sm.apply(command, pos) : this.sm.applyBytes(e.data, pos);
      this.bytesSinceSnapshot += e.data.byteLength;
      this.hooks.onApply?.(e.index, e.term, command, out);
      if (command) {
        if (command.clientId !== undefined) this.answer(`${command.clientId}/${command.seq}`, out.result);
        else if (command.op.type === 'register_session') {
          const w = this.regWaiters.get(e.index);
          if (w) {
            this.regWaiters.delete(e.index);
            if (w.term === e.term) w.resolve(out.result);
            else w.reject(new NotLeaderError(this.leaderHint()));
          }
        }
        if (!repeat) this.recordChanges(e.index, command.op, out.result, out.removedKeys ?? []);
      }
      for (const d of out.deliveries) this.answer(`${d.clientId}/${d.seq}`, d.result);
    }
    const last = entries[entries.length - 1];
    if (last) this.appliedThrough = Math.max(this.appliedThrough, last.index);
    // Register proposals overwritten by a new leader's log never apply at their index.
    for (const [index, w] of this.regWaiters) {
      if (index <= this.appliedThrough) {
        this.regWaiters.delete(index);
        w.reject(new NotLeaderError(this.leaderHint()));
      }
    }
    this.serveReadyReads();
    // CASes held behind a write of their key go on, judged on the state after it.
    if (this.leading) for (const k of released) this.fastPath.hold.release(k);
    for (const l of [...this.applyListeners]) l();
    this.ctx.events.emit('raft:apply-lag', { entries: Math.max(0, this.driver.probe.committed - this.appliedThrough) });
    const due =
      this.appliedThrough - this.lastSnapshotIndex >= this.options.snapshotEveryEntries ||
      this.bytesSinceSnapshot >= this.options.snapshotEveryBytes;
    // The driver records the applied index only once apply returns: snapshot from a timer.
    if (due && !this.snapshotting) this.ctx.scheduler.after(0, () => this.maybeSnapshot());
  }

  private restore(s: RaftSnapshot): void {
    const sm = this.freshStateMachine();
    sm.restore(s.data);
    this.sm = sm;
    this.namespaceNames.clear();
    this.learnNamespaces(s.data);
    this.snapshotsRestored++;
    this.lastSnapshotIndex = s.meta.index;
    this.bytesSinceSnapshot = 0;
    this.appliedThrough = s.meta.index;
    this.changes.resetTo(s.meta.index);
    this.hooks.onRestore?.(s.meta.index);
    this.serveReadyReads();
    for (const l of [...this.applyListeners]) l();
  }

  /** The namespace names in a coord snapshot (its canonical JSON body after the 4-byte envelope). */
  private learnNamespaces(data: Uint8Array): void {
    try {
      const body = JSON.parse(new TextDecoder().decode(data.subarray(4))) as { namespaces?: unknown };
      if (!Array.isArray(body.namespaces)) return;
      for (const ns of body.namespaces)
        if (Array.isArray(ns) && typeof ns[0] === 'string') this.namespaceNames.add(ns[0]);
    } catch {
      // status only: a snapshot the state machine accepted is always JSON
    }
  }

  private maybeSnapshot(): void {
    if (this.stopped || this.snapshotting) return;
    const applied = this.driver.appliedIndex;
    const due =
      applied - this.lastSnapshotIndex >= this.options.snapshotEveryEntries ||
      this.bytesSinceSnapshot >= this.options.snapshotEveryBytes;
    // The state machine's state must be the state at the driver's applied index: else try later.
    if (!due || this.appliedThrough !== applied) return;
    this.snapshotting = true;
    const data = this.sm.snapshot();
    const bytes = this.bytesSinceSnapshot;
    this.driver.createSnapshot(data, this.options.keepEntries).then(
      (s) => {
        if (s) {
          this.lastSnapshotIndex = s.meta.index;
          this.bytesSinceSnapshot = Math.max(0, this.bytesSinceSnapshot - bytes);
          this.snapshotsTaken++;
        }
        this.snapshotting = false;
      },
      (err) => {
        this.snapshotting = false;
        this.ctx.logger.warn({ err: String(err) }, 'strong: snapshot failed');
      },
    );
  }

  // ---------------------------------------------------------------- reads

  private onReadState(index: number, context: Uint8Array): void {
    const key = ctxKey(context);
    const p = this.reads.get(key);
    if (!p) {
      this.readPointListener?.(index, context);
      return;
    }
    this.reads.delete(key);
    p.index = index;
    p.confirmedAtMs = this.ctx.clock.nowMs();
    if (index <= this.appliedThrough) this.serve(p);
    else this.readyReads.push(p);
  }

  private serveReadyReads(): void {
    if (this.readyReads.length === 0) return;
    const waiting: PendingRead[] = [];
    for (const p of this.readyReads) {
      if (p.index <= this.appliedThrough) this.serve(p);
      else waiting.push(p);
    }
    this.readyReads = waiting;
  }

  private serve(p: PendingRead): void {
    this.hooks.onReadServed?.(p.confirmedAtMs - p.requestedAtMs);
    try {
      p.answer();
    } catch (err) {
      p.reject(err);
    }
  }

  // ---------------------------------------------------------------- leadership

  private onSoftState(ss: SoftState): void {
    const leading = ss.state === 'leader';
    const term = this.driver.node.raft.term;
    this.ctx.events.emit('raft:term', { term, leader: ss.lead === '' ? null : ss.lead });
    if (this.leading && !leading) this.failAll(new NotLeaderError(ss.lead === '' ? undefined : ss.lead));
    this.leading = leading;
  }

  /** Pending proposals and reads of a leader that stepped down fail at once (retryable). */
  private failAll(err: unknown): void {
    const waiters = [...this.waiters.values()].flatMap((s) => [...s]);
    this.waiters.clear();
    const regs = [...this.regWaiters.values()];
    this.regWaiters.clear();
    const reads = [...this.reads.values(), ...this.readyReads];
    this.reads.clear();
    this.readyReads = [];
    for (const w of [...waiters, ...regs]) w.reject(err);
    for (const r of reads) r.reject(err);
    this.fastPath.hold.dropAll(refused(this.leaderHint()));
  }

  /**
   * Leader duty: `expire` after winning an election, then at most every
   * `expireEveryMs`, and only when it has work: something may have fallen due
   * (the clock reached the state machine's `nextDueMs`), or state-machine
   * time lags the clock by half of `maxTimeStepMs`. The second keeps that
   * time current on an idle group, so the command after a quiet stretch
   * still judges deadlines at the clock's time (one command moves the time
   * at most `maxTimeStepMs`). An idle group with nothing to expire proposes
   * once per `maxTimeStepMs / 2` instead of once per `expireEveryMs`.
   */
  private expireDue(): boolean {
    const now = this.stampMs();
    return now >= this.sm.nextDueMs || now - this.sm.timeMs >= this.sm.limits.maxTimeStepMs / 2;
  }

  /**
   * The duty's timer. A member that does not lead looks every tick (it may be
   * elected any moment). A leader sleeps until the rule above can first say
   * yes, by its clock, but at most `expireEveryMs`: a clock that jumps is seen
   * within that, and a deadline set meanwhile is never missed, since every
   * deadline lies at least the smallest TTL or wait (1 s) after the command
   * that sets it, and the default `expireEveryMs` is 1 s. So an idle leader
   * wakes about once a second, not every tick.
   */
  private leaderLoop(): void {
    this.armLoop(this.options.tickMs);
  }

  private armLoop(delayMs: number): void {
    this.cancelLoop?.();
    this.cancelLoop = this.ctx.scheduler.after(delayMs, () => this.loopStep());
  }

  private loopStep(): void {
    this.cancelLoop = undefined;
    if (this.stopped) return;
    const raft = this.driver.probe;
    if (raft.state !== 'leader') {
      this.armLoop(this.options.tickMs);
      return;
    }
    const now = this.stampMs();
    if (
      raft.term !== this.leaderTerm ||
      (now - this.lastExpireAtMs >= this.options.expireEveryMs && this.expireDue())
    ) {
      try {
        this.driver.propose(encodeCommand({ nowMs: now, op: { type: 'expire' } }));
        this.leaderTerm = raft.term;
        this.lastExpireAtMs = now;
      } catch {
        // overloaded or stepping down: look again next tick
        this.armLoop(this.options.tickMs);
        return;
      }
    }
    this.armLoop(this.loopDelay(now));
  }

  /** How long a leader may sleep before the duty can have work: within [tickMs, expireEveryMs]. */
  private loopDelay(now: number): number {
    const dueAt = Math.min(this.sm.nextDueMs, this.sm.timeMs + this.sm.limits.maxTimeStepMs / 2);
    const at = Math.max(dueAt, this.lastExpireAtMs + this.options.expireEveryMs);
    return Math.min(this.options.expireEveryMs, Math.max(this.options.tickMs, at - now));
  }

  // ---------------------------------------------------------------- changes

  private recordChanges(revision: number, op: Operation, result: CommandResult, removed: string[]): void {
    if (!result.ok) return;
    const v = result.value;
    const push = (c: Omit<StrongChange, 'revision'>) => {
      this.namespaceNames.add(c.namespace);
      this.changes.push({ ...c, revision });
    };
    switch (v.type) {
      case 'entry':
        push({ namespace: v.entry.namespace, key: v.entry.key, type: 'set', entry: v.entry });
        return;
      case 'claim':
        if (v.won) push({ namespace: v.entry.namespace, key: v.entry.key, type: 'set', entry: v.entry });
        return;
      case 'deleted':
        push({ namespace: v.namespace, key: v.key, type: 'delete' });
        return;
      case 'lease': {
        if (op.type === 'lease_attach') return;
        const got = this.sm.query({ type: 'get', namespace: v.lease.namespace, key: v.lease.key });
        if (got.ok && got.value.type === 'got') {
          push({ namespace: v.lease.namespace, key: v.lease.key, type: 'set', entry: got.value.entry });
        }
        return;
      }
      case 'namespace_deleted': {
        // The live keys it removed, in key order (coord's apply output).
        if (op.type !== 'delete_namespace') return;
        for (const key of removed) push({ namespace: op.namespace, key, type: 'delete' });
        return;
      }
      default:
        return;
    }
  }
}

function ctxKey(context: Uint8Array): string {
  return new TextDecoder().decode(context);
}

/**
 * `not_leader` for a request refused before it was proposed (this member does
 * not lead, or Raft refused the proposal): it did nothing and never will. Its
 * `unsent` detail says so to the caller's router, across the wire too; every
 * other failure of a request handed to a member may hide a proposal.
 */
export function refused(leaderHint: PeerId | undefined): NotLeaderError {
  const err = new NotLeaderError(leaderHint);
  Object.assign(err.details, { unsent: true });
  return err;
}
