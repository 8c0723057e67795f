import {
  Emitter,
  type RaftLogStorage,
  type RaftLogUpdate,
  SeededRandom,
  systemClock,
  systemScheduler,
} from '@parley/interface';
import { createMemoryNetwork, silentLogger } from '@parley/net';
import { MemoryKVStorage, MemoryRaftLogStorage } from '@parley/storage';
import { describe, expect, it } from 'vitest';
import type { NodeEvents } from '../context.js';
import { createStrongModule } from './module.js';
import { quietLogger } from './testing.js';

/** A Raft log whose saves take `delayMs` (a slow fsync) and are counted. */
function slowLog(delayMs: number): { log: RaftLogStorage; saves: RaftLogUpdate[] } {
  const inner = new MemoryRaftLogStorage();
  const saves: RaftLogUpdate[] = [];
  const log = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'save') {
        return async (u: RaftLogUpdate) => {
          saves.push(u);
          await new Promise((r) => setTimeout(r, delayMs));
          return target.save(u);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { log, saves };
}

describe('group commit', () => {
  it('proposals arriving during one save share the next: 16 concurrent writes take far fewer than 16 saves', async () => {
    const transport = createMemoryNetwork().createTransport({ peerId: 'solo', logger: silentLogger });
    await transport.start();
    const { log, saves } = slowLog(20);
    const module = await createStrongModule(
      {
        peerId: 'solo',
        transport,
        clock: systemClock,
        scheduler: systemScheduler,
        random: new SeededRandom(1),
        logger: quietLogger,
        storage: { kv: new MemoryKVStorage(), raftLog: log },
        events: new Emitter<NodeEvents>(),
        dataDir: null,
      },
      { tickMs: 10 },
    );
    try {
      const ns = module.strong('g');
      await ns.set('warm', 0); // registers the session
      const before = saves.length;
      await Promise.all(Array.from({ length: 16 }, (_, i) => ns.set(`k${i}`, i)));
      const withEntries = saves.slice(before).filter((u) => (u.entries?.length ?? 0) > 0);
      const entries = withEntries.reduce((n, u) => n + (u.entries?.length ?? 0), 0);
      expect(entries).toBeGreaterThanOrEqual(16);
      expect(withEntries.length).toBeLessThanOrEqual(4);
    } finally {
      await module.close();
      await transport.stop();
    }
  });
});
