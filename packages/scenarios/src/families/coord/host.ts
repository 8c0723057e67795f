/**
 * A coord voter as a simulated process: the node's own strong group member
 * (`StrongReplica` of @parley/node: @parley/raft's RaftDriver applying
 * @parley/coord's CoordStateMachine, with its snapshots, ReadIndex reads,
 * answers by session and `expire` loop) over the host's transport, Raft log,
 * clock, scheduler and random stream. The scenario's clients talk to it as
 * the node's router does (`submit`, `read`), so the `coord-*` scenarios test
 * the member a node ships, without the router and session pool around it
 * (the `node-strong-*` scenarios run those).
 */

import type { ApplyOutput, Command, CommandResult, CoordStateMachine, Operation } from '@parley/coord';
import { Emitter, type PeerId, type RaftLogStorage } from '@parley/interface';
import type { NodeEvents, NodeLogger } from '@parley/node';
import { type MemberOptions, StrongReplica } from '@parley/node/testing';
import type { RaftDriver } from '@parley/raft';
import type { HostContext } from '@parley/sim';

const quiet: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };

export interface CoordHostOptions {
  voters: PeerId[];
  tickMs: number;
  /** The leader proposes `expire` this often (and right after it wins an election). */
  expireEveryMs: number;
  snapshotEveryEntries: number;
  keepEntries: number;
  maxSnapshotChunkBytes: number;
  versionKey: string;
  /** Called for every applied entry carrying a coord command, in log order, on every host. */
  onApply(host: PeerId, index: number, term: number, command: Command | undefined, output: ApplyOutput): void;
  /** Called when the state machine was replaced by a snapshot (InstallSnapshot). */
  onRestore?(host: PeerId, index: number): void;
  /** How the leader confirms a read: a heartbeat round (`safe`, ReadIndex) or its lease. Default `safe`. */
  readOnly?: 'safe' | 'leaseBased';
  /** Largest batch of entries per append message (1: one entry per message). Default: Raft's. */
  maxSizePerMsgBytes?: number;
  /**
   * Called for every read answered through `read`. `lease`: its read point came within the
   * millisecond it was asked for (a heartbeat round takes at least one hop each way).
   */
  onReadServed?(host: PeerId, lease: boolean): void;
  /** A CAS this host answered as failed at a read point, without the log. */
  onFailedFast?(host: PeerId, how: 'read-point' | 'superseded'): void;
}

export class CoordHost {
  readonly member: StrongReplica;
  readonly storage: RaftLogStorage;

  private constructor(
    readonly ctx: HostContext,
    options: CoordHostOptions,
  ) {
    this.storage = ctx.raftLog('raft');
    const memberOptions: MemberOptions = {
      voters: options.voters,
      learners: [],
      tickMs: options.tickMs,
      electionTimeoutTicks: 10,
      heartbeatTicks: 1,
      maxInflightMsgs: 64,
      ...(options.maxSizePerMsgBytes === undefined ? {} : { maxSizePerMsgBytes: options.maxSizePerMsgBytes }),
      leaseReads: options.readOnly === 'leaseBased',
      versionKey: options.versionKey,
      limits: {},
      snapshotEveryEntries: options.snapshotEveryEntries,
      snapshotEveryBytes: 8 * 1024 * 1024,
      keepEntries: options.keepEntries,
      expireEveryMs: options.expireEveryMs,
      maxWatchHistory: 1_000,
      maxSnapshotChunkBytes: options.maxSnapshotChunkBytes,
    };
    this.member = new StrongReplica(
      {
        peerId: ctx.id,
        transport: ctx.transport,
        clock: ctx.clock,
        scheduler: ctx.scheduler,
        random: ctx.random,
        logger: quiet,
        events: new Emitter<NodeEvents>(),
        storage: { raftLog: this.storage },
      },
      memberOptions,
      {
        onApply: (index, term, command, output) => options.onApply(ctx.id, index, term, command, output),
        onRestore: (index) => options.onRestore?.(ctx.id, index),
        onReadServed: (confirmMs) => options.onReadServed?.(ctx.id, confirmMs === 0),
        onFailedFast: (_c, _r, how) => options.onFailedFast?.(ctx.id, how),
      },
    );
  }

  static async boot(ctx: HostContext, options: CoordHostOptions): Promise<CoordHost> {
    const host = new CoordHost(ctx, options);
    await ctx.transport.start();
    await host.member.start();
    return host;
  }

  get driver(): RaftDriver {
    return this.member.driver;
  }

  get sm(): CoordStateMachine {
    return this.member.sm;
  }

  /** A storage or state machine error that stopped the driver. */
  get fatal(): unknown {
    return this.member.fatal;
  }

  isLeader(): boolean {
    return this.member.isLeader();
  }

  /**
   * Proposes `command` (stamped with this host's clock) and calls `done` with its result once
   * applied here; `failed` when this member stops waiting (it stepped down). False when this
   * host does not lead (the client asks another). `retry`: the client sent it before.
   */
  submit(
    command: Omit<Command, 'nowMs'>,
    done: (r: CommandResult) => void,
    failed: () => void = () => {},
    retry = false,
  ): boolean {
    if (!this.member.isLeader()) return false;
    try {
      this.member.submit(command, { retry }).promise.then(done, failed);
      return true;
    } catch {
      return false;
    }
  }

  /** A linearizable read without a log entry (ReadIndex or the lease); false when this host does not lead. */
  read(op: Operation, done: (r: CommandResult) => void, failed: () => void = () => {}): boolean {
    if (!this.member.isLeader()) return false;
    try {
      this.member.read(op).promise.then(done, failed);
      return true;
    } catch {
      return false;
    }
  }
}
