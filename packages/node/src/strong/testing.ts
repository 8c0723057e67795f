/**
 * Test support: strong modules over the in-memory transport and memory
 * storage (a "disk" per member that survives a restart), real timers with a
 * short Raft tick. Used by this module's tests, not shipped as API.
 */
import type { Operation } from '@parley/coord';
import {
  type Clock,
  Emitter,
  type PeerId,
  type RequestOptions,
  SeededRandom,
  systemClock,
  systemScheduler,
  type Transport,
} from '@parley/interface';
import { createMemoryNetwork, type MemoryNetwork, type MemoryTransport, silentLogger } from '@parley/net';
import { MemoryKVDisk, MemoryKVStorage, MemoryRaftLogDisk, MemoryRaftLogStorage } from '@parley/storage';
import type { NodeContext, NodeEvents, NodeLogger } from '../context.js';
import { createStrongModule, type StrongModule, type StrongModuleExtras } from './module.js';
import type { StrongOptions } from './options.js';
import { decodeRequest, STRONG_PROTOCOL } from './wire.js';

export const quietLogger: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** A strong request as a test's transport wrapper sees it: the decoded write operation, if it is one. */
export type RequestInterceptor = (
  send: () => Promise<Uint8Array>,
  write: Operation | undefined,
  options: RequestOptions | undefined,
) => Promise<Uint8Array>;

/**
 * `t` with every request passed through `intercept` (which sends it, or holds
 * or drops it, with `send`); everything else reaches `t` unchanged. For
 * `MemoryGroup.start`'s `wrap`.
 */
export function interceptRequests(t: MemoryTransport, intercept: RequestInterceptor): Transport {
  return new Proxy(t, {
    get: (target, prop) => {
      if (prop !== 'request') {
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      }
      return (peer: string, protocol: string, payload: Uint8Array, options?: RequestOptions) => {
        const req = protocol === STRONG_PROTOCOL ? decodeRequest(payload) : undefined;
        return intercept(
          () => target.request(peer, protocol, payload, options),
          req?.kind === 'write' ? req.command.op : undefined,
          options,
        );
      };
    },
  }) as Transport;
}

export interface TestMember {
  id: PeerId;
  transport: MemoryTransport;
  module: StrongModule;
  ctx: NodeContext;
  raftDisk: MemoryRaftLogDisk;
  kvDisk: MemoryKVDisk;
}

/** Fast Raft timing for tests: 10 ms ticks, elections after 100–200 ms. */
export const FAST: StrongOptions = {
  tickMs: 10,
  electionTimeoutTicks: 10,
  callTimeoutMs: 5_000,
  attemptTimeoutMs: 1_000,
};

export class MemoryGroup {
  readonly network: MemoryNetwork = createMemoryNetwork();
  readonly members = new Map<PeerId, TestMember>();
  private readonly disks = new Map<PeerId, { raft: MemoryRaftLogDisk; kv: MemoryKVDisk }>();
  /** One transport per id for the group's life (the memory network keeps ids); a stopped member has no handlers. */
  private readonly transports = new Map<PeerId, MemoryTransport>();

  constructor(
    readonly voters: PeerId[],
    readonly options: StrongOptions = FAST,
    readonly seed = 1,
  ) {}

  /**
   * Starts member `id` (or a non-member, if it is not a voter). `wrap` may
   * stand between the module and its transport (to lose answers, say);
   * `clock` is its wall clock (one that jumps, say; timers stay real).
   */
  async start(
    id: PeerId,
    extras: StrongModuleExtras = {},
    wrap?: (t: MemoryTransport) => Transport,
    options: StrongOptions = {},
    clock: Clock = systemClock,
  ): Promise<TestMember> {
    let disks = this.disks.get(id);
    if (!disks) this.disks.set(id, (disks = { raft: new MemoryRaftLogDisk(), kv: new MemoryKVDisk() }));
    let transport = this.transports.get(id);
    if (!transport) {
      transport = this.network.createTransport({ peerId: id, logger: silentLogger });
      this.transports.set(id, transport);
      await transport.start();
    }
    const ctx: NodeContext = {
      peerId: id,
      transport: wrap ? wrap(transport) : transport,
      clock,
      scheduler: systemScheduler,
      random: new SeededRandom(this.seed * 1000 + this.members.size + id.length),
      logger: quietLogger,
      storage: {
        kv: new MemoryKVStorage({ disk: disks.kv }),
        raftLog: new MemoryRaftLogStorage({ disk: disks.raft }),
      },
      events: new Emitter<NodeEvents>(),
      dataDir: null,
    };
    const module = await createStrongModule(ctx, { ...this.options, ...options, voters: this.voters }, extras);
    const m = { id, transport, module, ctx, raftDisk: disks.raft, kvDisk: disks.kv };
    this.members.set(id, m);
    return m;
  }

  /** Stops a member as a crash would (its disk keeps what was written). */
  async stop(id: PeerId): Promise<void> {
    const m = this.members.get(id);
    if (!m) return;
    this.members.delete(id);
    await m.module.close();
    await m.ctx.storage.raftLog.close();
    await m.ctx.storage.kv.close();
  }

  async stopAll(): Promise<void> {
    for (const id of [...this.members.keys()]) await this.stop(id);
    for (const t of this.transports.values()) await t.stop();
    this.transports.clear();
  }

  member(id: PeerId): TestMember {
    const m = this.members.get(id);
    if (!m) throw new Error(`${id} is not running`);
    return m;
  }

  leader(): TestMember | undefined {
    for (const m of this.members.values()) if (m.module.replica.isLeader()) return m;
    return undefined;
  }

  /**
   * Resolves once a member leads and every running voter knows it (of `among`, when given:
   * the members still in service); rejects after `timeoutMs`.
   */
  async waitForLeader(timeoutMs = 5_000, among?: readonly TestMember[]): Promise<TestMember> {
    const deadline = Date.now() + timeoutMs;
    const members = among ?? [...this.members.values()];
    for (;;) {
      const l = members.find((m) => m.module.replica.isLeader());
      if (l && members.every((m) => !this.voters.includes(m.id) || m.module.replica.leaderHint() === l.id)) {
        return l;
      }
      if (Date.now() > deadline) throw new Error('no leader elected in time');
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}
