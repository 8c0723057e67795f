/**
 * The log records of persist.ts: a group commit's local writes over distinct
 * keys are stored as one delta, and a restart reads back exactly the state
 * the node held (the same replica state, byte for byte), also when one batch
 * writes a key twice, deletes, counts and sets beside remote deltas.
 */
import { decodeDelta, encodeDelta, encodeState, NamespaceReplica } from '@parley/crdt';
import { ByteReader, SeededRandom, testSeed, withSeed } from '@parley/interface';
import { MemoryKVStorage } from '@parley/storage';
import { describe, expect, it } from 'vitest';
import { memoryCluster } from '../testing/testkit.js';
import { loadNamespace, NamespaceStore } from './persist.js';

const SEED = testSeed(20_261_203);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const T0 = 1_750_000_000_000;

describe(`eventual log records (PARLEY_SEED=${SEED})`, () => {
  it('a group commit of writes to distinct keys is one delta in its log record', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('batch');
    await Promise.all(Array.from({ length: 200 }, (_, i) => ns.set(`k${i}`, i)));
    await c.stop('a');
    const kv = new MemoryKVStorage({ disk: c.disks.get('a')?.kv });
    const loaded = await loadNamespace(kv, 'batch');
    await kv.close();
    // 200 writes in a few group commits: one delta each, not one per write.
    expect(loaded.logKeys.length).toBeGreaterThan(0);
    expect(loaded.deltas.length).toBe(loaded.logKeys.length);
    expect(loaded.deltas.reduce((n, d) => n + d.states.length, 0)).toBe(200);
  });

  it('a restart reads back the state the node held, for batches that repeat keys, delete and count', async () => {
    await withSeed(SEED, async (seed) => {
      const rnd = new SeededRandom(seed);
      for (let round = 0; round < 20; round++) {
        const c = memoryCluster();
        const a = await c.start('a');
        const ns = a.eventual('batch');
        for (let batch = 0; batch < 5; batch++) {
          const writes: Promise<unknown>[] = [];
          for (let i = 0; i < 1 + rnd.int(40); i++) {
            const key = `k${rnd.int(12)}`;
            const op = rnd.int(6);
            if (op === 0) writes.push(ns.delete(key));
            else if (op === 1) writes.push(ns.increment(`c${rnd.int(4)}`, rnd.int(5) - 2));
            else writes.push(ns.set(key, { round, batch, i }, { ttl: 1 + rnd.int(3600) }));
          }
          await Promise.all(writes);
          await c.time.advance(rnd.int(3) * 1_000); // some short TTLs run out between batches
        }
        const before = hex(encodeState(a.eventualModule.namespace('batch').replica.state()));
        await c.stop('a');
        const again = await c.start('a');
        await again.eventual('batch').get('k0');
        const after = hex(encodeState(again.eventualModule.namespace('batch').replica.state()));
        expect(after, `round ${round}`).toBe(before);
        await c.stop('a');
      }
    });
  }, 60_000);

  it('a batch keeps remote deltas as they came, in order between the runs of local writes', () => {
    const replica = new NamespaceReplica({ namespace: 'mix', replicaId: 'a' });
    const peer = new NamespaceReplica({ namespace: 'mix', replicaId: 'b' });
    const store = new NamespaceStore('mix', 1 << 20);
    const local = (key: string, v: number) => {
      const delta = replica.prepareSet(key, v, T0);
      store.appendLocal(delta, encodeDelta(delta), replica);
    };
    const remote = encodeDelta(peer.set('r', 1, T0));
    local('x', 1);
    local('y', 2);
    store.append(remote);
    local('x', 3); // a lone local write between two remote deltas keeps its bytes
    store.append(remote);
    local('z', 4);
    local('z', 5); // the key again: a run of its own
    const ops = store.collect(replica);
    const log = ops.find((o) => o.type === 'put' && o.key[2] === 'l');
    if (log?.type !== 'put') throw new Error('no log record');
    const r = new ByteReader(log.data.subarray(0, log.data.length - 4));
    const parts = Array.from({ length: r.count(1) }, () => decodeDelta(r.bytes()));
    expect(parts.map((d) => d.states.map((st) => `${st.node}:${st.key}`).join(','))).toEqual([
      'a:x,a:y',
      'b:r',
      'a:x',
      'b:r',
      'a:z',
      'a:z',
    ]);
  });
});
