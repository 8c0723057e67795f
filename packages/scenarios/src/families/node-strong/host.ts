/**
 * A Parley node's strong module as a simulated process: the real
 * `createStrongModule` of @parley/node over the host's transport, clock,
 * scheduler, random stream and disk (Raft log and KV store), so the
 * simulator runs exactly the code a node runs (forwarding, sessions,
 * ReadIndex, group commit, snapshots), not a stand-in.
 */
import type { ApplyOutput, Command, CommandResult, Operation } from '@parley/coord';
import { Emitter, type PeerId } from '@parley/interface';
import type { NodeContext, NodeEvents, NodeLogger, StrongOptions } from '@parley/node';
import { createStrongModule, type RaftStrongModule as StrongModule } from '@parley/node/testing';
import type { RaftDriver } from '@parley/raft';
import type { HostContext } from '@parley/sim';

const quiet: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };

export interface NodeStrongHostOptions {
  strong: StrongOptions;
  /** Called for every applied coord command, in log order, on every member. */
  onApply?(host: PeerId, index: number, term: number, command: Command | undefined, output: ApplyOutput): void;
  onRestore?(host: PeerId, index: number): void;
  /** A serializable or bounded read this member answered from its state, applied through `index`. */
  onLocalRead?(host: PeerId, op: Operation, index: number, result: CommandResult): void;
}

export class NodeStrongHost {
  private constructor(
    readonly ctx: HostContext,
    readonly nodeCtx: NodeContext,
    readonly module: StrongModule,
  ) {}

  static async boot(ctx: HostContext, options: NodeStrongHostOptions): Promise<NodeStrongHost> {
    const nodeCtx: NodeContext = {
      peerId: ctx.id,
      transport: ctx.transport,
      clock: ctx.clock,
      scheduler: ctx.scheduler,
      random: ctx.random,
      logger: quiet,
      storage: { kv: ctx.kv('kv'), raftLog: ctx.raftLog('raft') },
      events: new Emitter<NodeEvents>(),
      dataDir: null,
    };
    await ctx.transport.start();
    const module = await createStrongModule(nodeCtx, options.strong, {
      hooks: {
        onApply: (index, term, command, output) => options.onApply?.(ctx.id, index, term, command, output),
        onRestore: (index) => options.onRestore?.(ctx.id, index),
        onLocalRead: (op, index, result) => options.onLocalRead?.(ctx.id, op, index, result),
      },
    });
    return new NodeStrongHost(ctx, nodeCtx, module);
  }

  /** The Raft member inside (for the group helpers and invariants). */
  get driver(): RaftDriver {
    return this.module.replica.driver;
  }

  get fatal(): unknown {
    return this.module.replica.fatal;
  }
}
