import type { Transport } from '@parley/interface';
import { generatePsk } from './keys.js';
import { createLibp2pTransport, type Libp2pTransport } from './libp2p.js';
import { silentLogger } from './logger.js';
import { createMemoryNetwork } from './memory.js';
import { transportCompliance } from './testing/compliance.js';

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
