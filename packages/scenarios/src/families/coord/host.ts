/**
 * A coord voter as a simulated process: @parley/raft's RaftDriver over the
 * host's Transport, Raft log and Scheduler, applying @parley/coord's
 * CoordStateMachine to every committed entry (the wiring of the coord
 * README's "Wiring it under Raft"): the leader stamps each proposal with its
 * own clock, proposes `expire` after winning an election and periodically,
 * and snapshots the state machine every few entries.
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
import type { ConfState, PeerId, RaftEntry, RaftLogStorage, RaftSnapshot } from '@parley/interface';
import { RaftDriver, type ReadState } from '@parley/raft';
import type { HostContext } from '@parley/sim';

export interface CoordHostOptions {
  voters: PeerId[];
  tickMs: number;
  /** The leader proposes `expire` this often (and right after it wins an election). */
  expireEveryMs: number;
  snapshotEveryEntries: number;
  keepEntries: number;
  maxSnapshotChunkBytes: number;
  versionKey: string;
  /** Called for every applied coord command, in log order, on every host. */
  onApply(host: PeerId, index: number, term: number, command: Command, output: ApplyOutput): void;
  /** Called when the state machine was replaced by a snapshot (boot or InstallSnapshot). */
  onRestore?(host: PeerId, index: number): void;
  /** How the leader confirms a read: a heartbeat round (`safe`, ReadIndex) or its lease. Default `safe`. */
  readOnly?: 'safe' | 'leaseBased';
  /** Largest batch of entries per append message (1: one entry per message). Default: Raft's. */
  maxSizePerMsgBytes?: number;
  /** Called for every read answered through `read` (`lease`: its read point came from the lease). */
  onReadServed?(host: PeerId, lease: boolean): void;
}

/** Reads waiting for their ReadState or for the state machine to reach it, at most. */
const MAX_PENDING_READS = 1_000;
const ENC = new TextEncoder();
const DEC = new TextDecoder();

interface PendingRead {
  readonly op: Operation;
  readonly requestedAt: number;
  index: number | undefined;
  lease: boolean;
  done(result: CommandResult): void;
}

export class CoordHost {
  readonly driver: RaftDriver;
  sm: CoordStateMachine;
  readonly storage: RaftLogStorage;
  /** A storage or state machine error that stopped the driver. */
  fatal: unknown;
  restores = 0;
  expiresProposed = 0;
  /** Reads answered through ReadIndex (a heartbeat round) and, within the same millisecond, by the lease. */
  readsServed = 0;
  leaseReadsServed = 0;
  private readSeq = 0;
  private readonly reads = new Map<string, PendingRead>();
  private lastSnapshotIndex: number;
  private snapshotting = false;
  private leaderTerm = -1;

  private constructor(
    readonly ctx: HostContext,
    private readonly options: CoordHostOptions,
  ) {
    this.storage = ctx.raftLog('raft');
    this.sm = new CoordStateMachine({ versionKey: options.versionKey });
    const snap = this.storage.snapshot();
    if (snap.data.byteLength > 0) this.sm.restore(snap.data);
    this.lastSnapshotIndex = snap.meta.index;
    this.driver = new RaftDriver({
      raft: {
        id: ctx.id,
        random: ctx.random,
        voters: options.voters,
        electionTimeoutTicks: 10,
        heartbeatTicks: 1,
        maxSnapshotChunkBytes: options.maxSnapshotChunkBytes,
        maxInflightMsgs: 64,
        readOnly: options.readOnly ?? 'safe',
        ...(options.maxSizePerMsgBytes === undefined ? {} : { maxSizePerMsgBytes: options.maxSizePerMsgBytes }),
      },
      onReadState: (rs) => this.onReadState(rs),
      storage: this.storage,
      transport: ctx.transport,
      scheduler: ctx.scheduler,
      clock: ctx.clock,
      stateMachine: {
        apply: (entries, conf) => this.apply(entries, conf),
        restore: (s) => this.restore(s),
      },
      tickMs: options.tickMs,
      onError: (err) => {
        this.fatal = err;
      },
    });
  }

  static async boot(ctx: HostContext, options: CoordHostOptions): Promise<CoordHost> {
    const host = new CoordHost(ctx, options);
    await ctx.transport.start();
    await host.driver.start();
    host.leaderLoop();
    return host;
  }

  private apply(entries: readonly RaftEntry[], _conf: ConfState): void {
    for (const e of entries) {
      if (e.type !== 'normal' || e.data.byteLength === 0) continue; // Raft's own entries carry no command
      const command = decodeCommand(e.data); // only this scenario proposes: a decode error is a crash
      const output = this.sm.apply(command, { index: e.index, term: e.term });
      this.options.onApply(this.ctx.id, e.index, e.term, command, output);
    }
    // The driver records the new applied index only once apply returns: serve reads and
    // snapshot from a timer.
    if (this.reads.size > 0) this.ctx.scheduler.after(0, () => this.serveReads());
    if (!this.snapshotting && this.sm.applied.index - this.lastSnapshotIndex >= this.options.snapshotEveryEntries) {
      this.ctx.scheduler.after(0, () => this.maybeSnapshot());
    }
  }

  private restore(s: RaftSnapshot): void {
    this.restores++;
    this.sm = new CoordStateMachine({ versionKey: this.options.versionKey });
    this.sm.restore(s.data);
    this.lastSnapshotIndex = s.meta.index;
    this.options.onRestore?.(this.ctx.id, s.meta.index);
  }

  private maybeSnapshot(): void {
    const applied = this.driver.appliedIndex;
    if (this.snapshotting || applied - this.lastSnapshotIndex < this.options.snapshotEveryEntries) return;
    // The state machine's state must be the state at the driver's applied index (the last
    // entries may have been Raft's own, or a new batch may be in flight): else try later.
    if (this.sm.applied.index !== applied) return;
    this.snapshotting = true;
    const data = this.sm.snapshot();
    this.driver.createSnapshot(data, this.options.keepEntries).then(
      (s) => {
        if (s) this.lastSnapshotIndex = s.meta.index;
        this.snapshotting = false;
      },
      () => {
        this.snapshotting = false;
      },
    );
  }

  /** Leader duty: `expire` after winning an election and every `expireEveryMs`. */
  private leaderLoop(): void {
    let sinceExpireMs = 0;
    const step = () => {
      const st = this.driver.status();
      if (st.state === 'leader') {
        sinceExpireMs += this.options.tickMs;
        if (st.term !== this.leaderTerm || sinceExpireMs >= this.options.expireEveryMs) {
          if (this.proposeOp({ type: 'expire' }) === 'proposed') {
            this.leaderTerm = st.term;
            sinceExpireMs = 0;
            this.expiresProposed++;
          }
        }
      }
      this.ctx.scheduler.after(this.options.tickMs, step);
    };
    this.ctx.scheduler.after(this.options.tickMs, step);
  }

  /**
   * A linearizable read without a log entry: ReadIndex (or the lease) gives a
   * read point, answered from the state machine once it has applied that far,
   * at time max(state-machine time, this host's clock). False when this host
   * does not lead (the client asks another).
   */
  read(op: Operation, done: (result: CommandResult) => void): boolean {
    if (!this.isLeader() || this.reads.size >= MAX_PENDING_READS) return false;
    const key = `${this.ctx.id}#${this.ctx.generation}/${++this.readSeq}`;
    this.reads.set(key, { op, requestedAt: this.ctx.clock.nowMs(), index: undefined, lease: false, done });
    try {
      this.driver.readIndex(ENC.encode(key));
    } catch {
      this.reads.delete(key);
      return false;
    }
    return true;
  }

  private onReadState(rs: ReadState): void {
    const key = DEC.decode(rs.context);
    const r = this.reads.get(key);
    if (!r || r.index !== undefined) return;
    r.index = rs.index;
    // A heartbeat round takes at least one network hop each way: a read point given within
    // the millisecond it was asked for came from the lease.
    r.lease = this.ctx.clock.nowMs() === r.requestedAt;
    this.serveReads();
  }

  private serveReads(): void {
    const applied = this.driver.appliedIndex;
    if (this.sm.applied.index > applied) return; // mid-batch: the next timer serves them
    for (const [key, r] of this.reads) {
      if (r.index === undefined || r.index > applied) continue;
      this.reads.delete(key);
      this.readsServed++;
      if (r.lease) this.leaseReadsServed++;
      this.options.onReadServed?.(this.ctx.id, r.lease);
      r.done(this.sm.query(r.op, this.ctx.clock.nowMs()));
    }
  }

  isLeader(): boolean {
    return this.driver.status().state === 'leader';
  }

  /**
   * The leader stamps `command` with its own clock and proposes it: the log
   * position it was appended at, or undefined when this host is not the leader.
   */
  propose(command: Omit<Command, 'nowMs'>): { index: number; term: number } | undefined {
    if (!this.isLeader()) return undefined;
    try {
      return this.driver.propose(encodeCommand({ ...command, nowMs: this.ctx.clock.nowMs() }));
    } catch {
      return undefined;
    }
  }

  private proposeOp(op: Operation): 'proposed' | 'not_leader' {
    return this.propose({ op }) === undefined ? 'not_leader' : 'proposed';
  }
}
