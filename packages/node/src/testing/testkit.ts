/**
 * Test helpers for node tests (not exported from the package index): a manual
 * clock and scheduler, silent logger, and nodes on an in-memory network with
 * in-memory stores that survive a simulated crash.
 */
import type { Cancel, Clock, Scheduler } from '@parley/interface';
import { SeededRandom } from '@parley/interface';
import { createMemoryNetwork, type MemoryNetwork, silentLogger } from '@parley/net';
import { MemoryKVDisk, MemoryRaftLogDisk, openMemoryKV, openMemoryRaftLog } from '@parley/storage';
import type { NodeLogger } from '../context.js';
import type { EventualOptions } from '../eventual/options.js';
import { createNode, internals, type ParleyNodeInternals } from '../node.js';

export const silentNodeLogger: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** A clock and scheduler that move only when told to. */
export class ManualTime implements Clock, Scheduler {
  private now: number;
  private timers: Array<{ at: number; seq: number; fn: () => void; cancelled: boolean }> = [];
  private seq = 0;

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  after(delayMs: number, fn: () => void): Cancel {
    const t = { at: this.now + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    this.timers.push(t);
    return () => {
      t.cancelled = true;
    };
  }

  /** Moves time forward by `ms`, running due timers in order (and letting their promises settle). */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.now = Math.max(this.now, next.at);
      next.fn();
      await settle();
    }
    this.now = end;
    await settle();
  }
}

/** Lets pending promise chains and setImmediate deliveries run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Resolves when `check()` holds, polling on every macrotask turn; rejects after `timeoutMs` of real time. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise<void>((r) => setImmediate(r));
  }
}

export interface MemoryCluster {
  network: MemoryNetwork;
  time: ManualTime;
  disks: Map<string, { kv: MemoryKVDisk; raft: MemoryRaftLogDisk }>;
  start(id: string, eventual?: EventualOptions): Promise<ParleyNodeInternals>;
  /** Kills node `id` without a clean close: unsynced writes of its stores are lost. */
  crash(id: string): Promise<void>;
  /** Closes node `id` and its stores (so that it can start again). */
  stop(id: string): Promise<void>;
}

/** Nodes named by id on one in-memory network and one manual clock; each id keeps its disk across restarts. */
export function memoryCluster(seed = 1): MemoryCluster {
  const network = createMemoryNetwork();
  const time = new ManualTime();
  const disks = new Map<string, { kv: MemoryKVDisk; raft: MemoryRaftLogDisk }>();
  let n = seed;
  const running = new Map<string, { node: ParleyNodeInternals; crash: () => void; close: () => Promise<void> }>();
  return {
    network,
    time,
    disks,
    async start(id, eventual) {
      let disk = disks.get(id);
      if (!disk) {
        disk = { kv: new MemoryKVDisk(), raft: new MemoryRaftLogDisk() };
        disks.set(id, disk);
      }
      const kv = await openMemoryKV({ disk: disk.kv });
      const raftLog = await openMemoryRaftLog({ disk: disk.raft });
      const node = internals(
        await createNode({
          transport: network.createTransport({ peerId: id, logger: silentLogger }),
          storage: { kv, raftLog },
          clock: time,
          scheduler: time,
          random: new SeededRandom(n++),
          logger: silentNodeLogger,
          eventual: { antiEntropyMs: 1_000, ...eventual },
        }),
      );
      running.set(id, {
        node,
        crash: () => {
          kv.crash();
          raftLog.crash();
        },
        close: async () => {
          await node.close();
          await kv.close();
          await raftLog.close();
        },
      });
      return node;
    },
    async crash(id) {
      const r = running.get(id);
      if (!r) return;
      running.delete(id);
      r.crash();
      await r.node.close().catch(() => {});
    },
    async stop(id) {
      const r = running.get(id);
      if (!r) return;
      running.delete(id);
      await r.close();
    },
  };
}
