/**
 * The simulator's transport and disks run the same compliance suites as every
 * other implementation (libp2p and in-memory transports; level and memory stores),
 * here and only here.
 */
import type { Transport } from '@parley/interface';
import { transportCompliance } from '@parley/net/testing';
import { kvStorageCompliance, raftLogStorageCompliance } from '@parley/storage/testing';
import { Simulation } from './simulation.js';
import type { SimDisk } from './storage.js';

/**
 * The storage suites await operations directly; this drives a simulation's
 * event loop in the background so that simulated syncs complete.
 */
function drive(sim: Simulation): () => void {
  let on = true;
  void (async () => {
    while (on) if (!(await sim.step())) await new Promise<void>((r) => setImmediate(r));
  })();
  return () => {
    on = false;
  };
}

async function diskHarness(seed: number): Promise<{ disk: SimDisk; stop: () => void }> {
  const sim = new Simulation({ seed });
  const host = sim.addHost('h', () => undefined);
  await sim.runFor(1);
  return { disk: host.disk, stop: drive(sim) };
}

kvStorageCompliance({
  name: 'simulated',
  async harness() {
    const { disk, stop } = await diskHarness(21);
    return {
      open: async () => disk.kv('compliance'),
      crash: async () => disk.crash(),
      dispose: async () => stop(),
    };
  },
});

raftLogStorageCompliance({
  name: 'simulated',
  async harness() {
    const { disk, stop } = await diskHarness(22);
    return {
      open: async () => disk.raftLog('compliance'),
      crash: async () => disk.crash(),
      dispose: async () => stop(),
    };
  },
});

transportCompliance('simulated', {
  async create(count, limits, beforeStart) {
    const sim = new Simulation({ seed: 23 });
    for (let i = 0; i < count; i++) {
      sim.addHost(
        `peer-${i}`,
        async (ctx) => {
          beforeStart?.(ctx.transport);
          await ctx.transport.start();
          return ctx.transport;
        },
        { transport: limits },
      );
    }
    await sim.runFor(10);
    const transports = sim.hosts().map((h) => h.app as Transport);
    return {
      transports,
      async waitFor(condition, maxMs) {
        if (!(await sim.runUntil(condition, maxMs))) throw new Error(`condition not met within ${maxMs} simulated ms`);
      },
      async settle<T>(promise: Promise<T>): Promise<T> {
        let done = false;
        const watched = promise.finally(() => {
          done = true;
        });
        watched.catch(() => {});
        await sim.runUntil(() => done, 600_000);
        return promise;
      },
      async close() {
        for (const t of transports) await t.stop();
      },
    };
  },
});
