/**
 * The restore path merges the node's own records without checking them again
 * (persist.ts, LocalReplica.restore): safe only because a record whose checksum
 * fails is dropped. Fuzzed here: records torn (cut short) or corrupted (a byte
 * changed) on the disk between two runs; the node must open, count the record
 * as torn, and read only values that were written to each key, never garbage.
 * Some writes go in at once, so log records hold joined deltas too (persist.ts).
 * The replica restored in bulk (NamespaceReplica.restore) must also equal the
 * general merge of the records that survived.
 */
import { encodeState, NamespaceReplica } from '@parley/crdt';
import { SeededRandom } from '@parley/interface';
import { MemoryKVStorage } from '@parley/storage';
import { describe, expect, it } from 'vitest';
import { memoryCluster } from '../testing/testkit.js';
import { loadNamespace } from './persist.js';

const KEYS = 40;

describe('eventual restore with torn and corrupted records', () => {
  it('drops every damaged record, and every value read back is one that was written', async () => {
    const rnd = new SeededRandom(27);
    for (let round = 0; round < 30; round++) {
      const c = memoryCluster();
      // A small compaction threshold: the disk holds snapshot chunks and log records.
      const options = { compactLogBytes: 600 };
      const node = await c.start('a', options);
      const ns = node.eventual('fuzz');
      const written = new Map<string, Set<string>>();
      for (let i = 0; i < 120; i++) {
        // Sometimes a few writes at once: one group commit, logged as one joined delta (persist.ts).
        const sets: Promise<unknown>[] = [];
        for (let j = rnd.int(3) === 0 ? 1 + rnd.int(4) : 1; j > 0; j--) {
          const key = `k${rnd.int(KEYS)}`;
          const value = { i, j, round, pad: 'x'.repeat(rnd.int(20)) };
          sets.push(ns.set(key, value));
          if (!written.has(key)) written.set(key, new Set());
          written.get(key)?.add(JSON.stringify(value));
        }
        await Promise.all(sets);
        if (rnd.int(10) === 0) await ns.delete(`k${rnd.int(KEYS)}`);
      }
      await c.stop('a');
      const disk = c.disks.get('a')?.kv;
      if (!disk) throw new Error('no disk');
      const records = [...disk.records.keys()].filter((k) => k.includes('fuzz'));
      const victim = records[rnd.int(records.length)] as string;
      const data = disk.records.get(victim) as Uint8Array;
      const damaged = new Uint8Array(data);
      const torn = rnd.int(2) === 0 && data.length > 1;
      if (torn) {
        disk.set(victim, damaged.subarray(0, rnd.int(data.length)));
      } else {
        const at = rnd.int(damaged.length);
        damaged[at] = (damaged[at] as number) ^ (1 + rnd.int(255));
        disk.set(victim, damaged);
      }
      const kv = new MemoryKVStorage({ disk });
      const loaded = await loadNamespace(kv, 'fuzz');
      await kv.close();
      const again = await c.start('a', options);
      const ns2 = again.eventual('fuzz');
      await ns2.get('k0');
      expect(again.eventualModule.namespace('fuzz').counters.tornRecords, `round ${round}`).toBe(1);
      const restored = again.eventualModule.namespace('fuzz').replica;
      const general = new NamespaceReplica({
        namespace: 'fuzz',
        replicaId: restored.replicaId,
        tombstoneGraceMs: restored.tombstoneGraceMs,
        maxTtlSeconds: restored.maxTtlSeconds,
      });
      for (const d of loaded.deltas) general.merge(d, loaded.maxWallMs, { checked: true, ignoreDeps: true });
      expect(Buffer.from(encodeState(restored.state())).toString('hex'), `round ${round}`).toBe(
        Buffer.from(encodeState(general.state())).toString('hex'),
      );
      for (let k = 0; k < KEYS; k++) {
        const e = ns2.peek(`k${k}`);
        if (e !== undefined)
          expect(written.get(`k${k}`)?.has(JSON.stringify(e.value)), `round ${round} k${k}`).toBe(true);
      }
      await c.stop('a');
    }
  }, 60_000);
});
