/**
 * The storage compliance suites of @parley/storage against every implementation outside that package:
 * the simulator's disk (`@parley/sim`, KV stores and Raft logs) and @parley/raft's MemoryRaftStorage.
 * (Level and memory run the same suites in packages/storage.)
 */
import type { KVStorage, RaftLogStorage, StorageKey, StorageOp } from '@parley/interface';
import { MemoryRaftStorage } from '@parley/raft';
import { type HostContext, Simulation } from '@parley/sim';
import { kvStorageCompliance } from '@parley/storage/compliance/kv';
import { raftLogStorageCompliance } from '@parley/storage/compliance/raft-log';

/** Longest simulated time one storage call may take before the harness gives up on it. */
const SETTLE_BOUND_MS = 10_000;

/**
 * One simulated host whose boot hands back its context, so the suites can open stores on its disk.
 * Writes on the simulated disk resolve only as simulated time passes: every call is driven by running the
 * simulation until it settles, or until the host crashes under it (an in-flight write then never resolves).
 */
class SimStores {
  readonly sim: Simulation;
  private readonly host;
  private crashes = 0;

  constructor(seed: number) {
    this.sim = new Simulation({ seed });
    this.host = this.sim.addHost('a', (ctx: HostContext) => ({ ctx }));
  }

  async context(): Promise<HostContext> {
    await this.sim.runUntil(() => this.host.app !== undefined, SETTLE_BOUND_MS);
    const app = this.host.app;
    if (!app) throw new Error('simulated host did not boot');
    return app.ctx;
  }

  async drive<T>(start: () => Promise<T>): Promise<T> {
    const generation = this.crashes;
    const p = start();
    let settled = false;
    p.then(
      () => (settled = true),
      () => (settled = true),
    );
    await this.sim.runUntil(() => settled || this.crashes !== generation, SETTLE_BOUND_MS);
    if (!settled) throw new Error('simulated storage call did not complete (host crashed or time ran out)');
    return p;
  }

  crash(): void {
    this.crashes++;
    this.host.crash();
    this.host.restart();
  }
}

function drivenKV(env: SimStores, inner: KVStorage): KVStorage {
  return {
    load: (key: StorageKey) => env.drive(() => inner.load(key)),
    save: (key: StorageKey, data: Uint8Array) => env.drive(() => inner.save(key, data)),
    remove: (key: StorageKey) => env.drive(() => inner.remove(key)),
    loadRange: (prefix: StorageKey) => env.drive(() => inner.loadRange(prefix)),
    removeRange: (prefix: StorageKey) => env.drive(() => inner.removeRange(prefix)),
    batch: (ops: readonly StorageOp[]) => env.drive(() => inner.batch(ops)),
    close: () => env.drive(() => inner.close()),
  };
}

function drivenLog(env: SimStores, inner: RaftLogStorage): RaftLogStorage {
  return {
    initialState: () => inner.initialState(),
    entries: (lo, hi, maxBytes) => inner.entries(lo, hi, maxBytes),
    term: (index) => inner.term(index),
    firstIndex: () => inner.firstIndex(),
    lastIndex: () => inner.lastIndex(),
    snapshot: () => inner.snapshot(),
    save: (update) => env.drive(() => inner.save(update)),
    createSnapshot: (index, confState, data) => env.drive(() => inner.createSnapshot(index, confState, data)),
    compact: (index) => env.drive(() => inner.compact(index)),
    close: () => env.drive(() => inner.close()),
  };
}

let simSeed = 1;

kvStorageCompliance({
  name: 'simulator (@parley/sim SimDisk)',
  harness: () => {
    const env = new SimStores(simSeed++);
    return {
      open: async () => drivenKV(env, (await env.context()).kv('compliance')),
      crash: async () => env.crash(),
    };
  },
});

raftLogStorageCompliance({
  name: 'simulator (@parley/sim SimDisk)',
  harness: () => {
    const env = new SimStores(simSeed++);
    return {
      open: async () => drivenLog(env, (await env.context()).raftLog('compliance')),
      crash: async () => env.crash(),
    };
  },
});

raftLogStorageCompliance({
  name: '@parley/raft MemoryRaftStorage',
  harness: () => {
    // Every save is durable when it returns, so reopening after a close or a crash is a new handle on the
    // same contents.
    let current: MemoryRaftStorage | undefined;
    return {
      open: async () => {
        current = current ? current.reopen() : new MemoryRaftStorage();
        return current;
      },
      crash: async () => undefined,
    };
  },
});
