/** The workloads' adapter over the official etcd3 client (one Etcd3 instance per call site, no batching). */
import { type Etcd3, EtcdLockFailedError } from 'etcd3';
import type { StrongAdapter } from './workloads.js';

export function etcdAdapter(client: Etcd3): StrongAdapter {
  return {
    async put(key, value) {
      await client.put(key).value(value);
    },
    async version(key) {
      const r = await client.get(key).exec();
      const kv = r.kvs[0];
      if (kv) return kv.mod_revision;
      await client.if(key, 'Create', '==', 0).then(client.put(key).value('0')).commit();
      return (await client.get(key).exec()).kvs[0]?.mod_revision ?? '0';
    },
    async cas(key, value, version) {
      const r = await client
        .if(key, 'Mod', '==', version)
        .then(client.put(key).value(value))
        .else(client.get(key))
        .commit();
      // Won: the put's mod_revision is the txn's revision. Lost: the else-branch get's.
      if (r.succeeded) return { won: true, version: r.header.revision };
      const kv = r.responses[0]?.response_range?.kvs[0];
      if (kv === undefined) throw new Error(`CAS on '${key}' lost to a delete`);
      return { won: false, version: kv.mod_revision };
    },
    async claim(key, value) {
      const r = await client.if(key, 'Create', '==', 0).then(client.put(key).value(value)).commit();
      return r.succeeded;
    },
    async lockCycle(key, _owner, contended) {
      // etcd3's lock API is a try-lock (lease + create-if-absent); contenders retry until they win.
      // It has no release the next acquire may overtake: a pipelined cycle is the same cycle.
      for (let attempt = 0; ; attempt++) {
        const lock = client.lock(key).ttl(10);
        try {
          await lock.acquire();
          await lock.release();
          return undefined;
        } catch (err) {
          if (!contended || !(err instanceof EtcdLockFailedError) || attempt > 100_000) throw err;
        }
      }
    },
  };
}
