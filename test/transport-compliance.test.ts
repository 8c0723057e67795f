/**
 * One Transport compliance suite, three implementations: libp2p over TCP on
 * 127.0.0.1, the in-memory network, and the simulator's transport (driven on
 * virtual time: waiting advances the simulation).
 */
import type { Transport } from '@parley/interface';
import {
  createLibp2pTransport,
  createMemoryNetwork,
  generatePsk,
  type Libp2pTransport,
  silentLogger,
} from '@parley/net';
import { transportCompliance } from '@parley/net/compliance';
import { Simulation } from '@parley/sim';

const seed = Number(process.env.PARLEY_SEED ?? 1);

transportCompliance('libp2p over TCP (127.0.0.1)', {
  async create(count, limits, beforeStart) {
    const psk = generatePsk();
    const transports: Libp2pTransport[] = [];
    for (let i = 0; i < count; i++) {
      const t = await createLibp2pTransport({
        listen: ['/ip4/127.0.0.1/tcp/0'],
        bootstrap: transports.flatMap((earlier) => earlier.addresses()),
        psk,
        limits,
        logger: silentLogger,
      });
      beforeStart?.(t);
      await t.start();
      transports.push(t);
    }
    return { transports, close: async () => void (await Promise.all(transports.map((t) => t.stop()))) };
  },
});

transportCompliance('memory', {
  async create(count, limits, beforeStart) {
    const network = createMemoryNetwork();
    const transports: Transport[] = [];
    for (let i = 0; i < count; i++) {
      const t = network.createTransport({ limits, logger: silentLogger });
      beforeStart?.(t);
      await t.start();
      transports.push(t);
    }
    return { transports, close: async () => void (await Promise.all(transports.map((t) => t.stop()))) };
  },
});

transportCompliance(`simulator (seed ${seed})`, {
  async create(count, limits, beforeStart) {
    const sim = new Simulation({ seed });
    const ids = Array.from({ length: count }, (_, i) => `sim-${i}`);
    for (const id of ids) {
      sim.addHost(
        id,
        async (ctx) => {
          beforeStart?.(ctx.transport);
          await ctx.transport.start();
          return ctx.transport;
        },
        { transport: limits },
      );
    }
    await sim.runFor(10);
    const transports = ids.map((id) => {
      const t = sim.host<Transport>(id).app;
      if (!t) throw new Error(`host ${id} did not boot (PARLEY_SEED=${seed})`);
      return t;
    });
    return {
      transports,
      async waitFor(condition, maxMs) {
        if (!(await sim.runUntil(condition, maxMs))) {
          throw new Error(`condition not met within ${maxMs} simulated ms (PARLEY_SEED=${seed})`);
        }
      },
      async settle<T>(promise: Promise<T>): Promise<T> {
        let settled = false;
        const tracked = promise.finally(() => {
          settled = true;
        });
        tracked.catch(() => {});
        if (!(await sim.runUntil(() => settled, 60_000))) {
          throw new Error(`promise did not settle within 60 simulated s (PARLEY_SEED=${seed})`);
        }
        return tracked;
      },
      async close() {
        await Promise.all(transports.map((t) => t.stop()));
        await sim.runFor(100);
      },
    };
  },
});
