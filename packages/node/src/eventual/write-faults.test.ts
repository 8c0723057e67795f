/**
 * An eventual write whose disk batch fails changes nothing: it is not
 * readable, no watcher hears of it, no peer gets it (gossip or
 * anti-entropy), a restart finds nothing of it, and a retried increment
 * counts once. The node's memory store is made to fail the way a full disk
 * does (StorageFullError from `batch`); packages/node/src/disk-faults.test.ts
 * does the same on a real full tmpfs.
 */
import { type KVStorage, StorageFullError, type StorageOp, UnavailableError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import type { EventualChange } from '../api.js';
import type { ParleyNodeInternals } from '../node.js';
import { eventually, memoryCluster, settle } from '../testing/testkit.js';

/** Makes the node's store fail its next `count` batches with `err()` (its real batches otherwise). */
function failBatches(node: ParleyNodeInternals, err: () => Error, count = 1): { failures: number } {
  const kv = node.context.storage.kv as KVStorage;
  const real = kv.batch.bind(kv);
  const state = { failures: 0 };
  kv.batch = async (ops: readonly StorageOp[]) => {
    if (state.failures < count) {
      state.failures++;
      throw err();
    }
    return real(ops);
  };
  return state;
}

const diskFull = () => new StorageFullError('kv', 'No space left on device');

describe('an eventual write whose disk batch fails', () => {
  it('is not readable, not watched, not sent to a peer, and gone after a restart', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const na = a.eventual('cfg');
    const nb = b.eventual('cfg');
    await na.set('kept', 1);
    await eventually(async () => (await nb.get('kept')) !== undefined);
    const changes: EventualChange[] = [];
    na.watch({}, (ch) => changes.push(ch));
    const injected = failBatches(a, diskFull);
    await expect(na.set('lost', 'x')).rejects.toMatchObject({ code: 'storage_full' });
    expect(injected.failures).toBe(1);
    expect(await na.get('lost')).toBeUndefined();
    expect((await na.list()).items.map((e) => e.key)).toEqual(['kept']);
    expect(changes).toEqual([]);
    // Anti-entropy in both directions finds nothing of it.
    await a.eventualModule.namespace('cfg').replication.antiEntropyWith('b');
    await b.eventualModule.namespace('cfg').replication.antiEntropyWith('a');
    await c.time.advance(5_000);
    expect(await nb.get('lost')).toBeUndefined();
    // The store is faulted now: later writes fail at once with the same code, reads still work.
    await expect(na.set('later', 1)).rejects.toMatchObject({ code: 'storage_full' });
    await expect(na.increment('n')).rejects.toMatchObject({ code: 'storage_full' });
    await expect(na.delete('kept')).rejects.toMatchObject({ code: 'storage_full' });
    expect((await na.get('kept'))?.value).toBe(1);
    expect(a.commits.fault).toMatchObject({ code: 'storage_full' });
    await c.stop('a');
    const again = (await c.start('a')).eventual('cfg');
    expect(await again.get('lost')).toBeUndefined();
    expect((await again.get('kept'))?.value).toBe(1);
    await c.stop('a');
    await c.stop('b');
  });

  it('a node whose disk faulted still serves anti-entropy: what it holds durably reaches a peer', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    await b.eventualModule.namespace('ae').ready;
    c.network.partition(['a'], ['b']);
    await a.eventual('ae').set('durable', 1); // on a's disk; b has not got it
    failBatches(a, diskFull, 1000);
    await expect(a.eventual('ae').set('lost', 2)).rejects.toMatchObject({ code: 'storage_full' });
    c.network.heal();
    await eventually(async () => {
      await b.eventualModule.namespace('ae').replication.antiEntropyWith('a');
      return (await b.eventual('ae').get('durable')) !== undefined;
    });
    expect(await b.eventual('ae').get('lost')).toBeUndefined();
    await c.stop('a');
    await c.stop('b');
  });

  it('an increment retried after the failure counts once, after a restart or a transient failure', async () => {
    const c = memoryCluster();
    let node = await c.start('a');
    await node.eventual('c').increment('n', 5);
    failBatches(node, diskFull);
    await expect(node.eventual('c').increment('n', 1)).rejects.toMatchObject({ code: 'storage_full' });
    expect((await node.eventual('c').get('n'))?.value).toBe(5);
    await c.stop('a');
    node = await c.start('a');
    expect((await node.eventual('c').increment('n', 1)).value).toBe(6); // the retry
    // A failure that is not a disk fault (here: transient) fails the write; the store keeps working.
    failBatches(node, () => new UnavailableError('transient'));
    await expect(node.eventual('c').increment('n', 1)).rejects.toMatchObject({ code: 'unavailable' });
    expect((await node.eventual('c').get('n'))?.value).toBe(6);
    expect((await node.eventual('c').increment('n', 1)).value).toBe(7);
    await c.stop('a');
    node = await c.start('a');
    expect((await node.eventual('c').get('n'))?.value).toBe(7);
    await c.stop('a');
  });

  it('fails every write of the batch and those queued behind it; writes after it apply', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('c');
    await ns.increment('n', 1);
    // The next batch hangs until released, then fails (not a disk fault: the store keeps working).
    const kv = node.context.storage.kv as KVStorage;
    const real = kv.batch.bind(kv);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let calls = 0;
    kv.batch = async (ops: readonly StorageOp[]) => {
      if (calls++ > 0) return real(ops);
      await gate;
      throw new UnavailableError('transient');
    };
    const first = [ns.increment('n', 1), ns.set('k1', 1)].map((p) =>
      p.then(
        () => 'ok',
        (e: { code: string }) => e.code,
      ),
    );
    await eventually(() => calls === 1); // the batch holding them is in flight
    // Queued behind it, building on it (the counter's share counts the increment in flight).
    const queued = [ns.increment('n', 1), ns.set('k2', 2)].map((p) =>
      p.then(
        () => 'ok',
        (e: { code: string }) => e.code,
      ),
    );
    await settle();
    release();
    expect(await Promise.all([...first, ...queued])).toEqual([
      'unavailable',
      'unavailable',
      'unavailable',
      'unavailable',
    ]);
    expect((await ns.get('n'))?.value).toBe(1);
    expect(await ns.get('k1')).toBeUndefined();
    expect(await ns.get('k2')).toBeUndefined();
    expect((await ns.increment('n', 1)).value).toBe(2);
    await c.stop('a');
    const again = (await c.start('a')).eventual('c');
    expect((await again.get('n'))?.value).toBe(2);
    expect(await again.get('k2')).toBeUndefined();
    await c.stop('a');
  });

  it('a failed snapshot batch keeps the log and merged remote deltas, and writes them next time', async () => {
    const c = memoryCluster();
    const a = await c.start('a', { compactLogBytes: 1, remoteCommitDelayMs: 0 }); // every batch is a snapshot
    const b = await c.start('b');
    await a.eventual('s').set('x', 1);
    await b.eventualModule.namespace('s').ready;
    await c.time.advance(10); // the first anti-entropy rounds end
    await a.commits.idle();
    const injected = failBatches(a, () => new UnavailableError('transient'));
    await b.eventual('s').set('from-b', 3);
    // Merged by anti-entropy; its batch fails.
    expect(await a.eventualModule.namespace('s').replication.antiEntropyWith('b')).toBe(1);
    await a.commits.idle();
    expect(injected.failures).toBe(1);
    expect((await a.eventual('s').get('from-b'))?.value).toBe(3); // merged in memory
    await a.eventual('s').set('y', 4); // this batch writes the snapshot again, with the remote delta
    await c.stop('b');
    await c.crash('a');
    const again = (await c.start('a')).eventual('s');
    expect((await again.get('x'))?.value).toBe(1);
    expect((await again.get('y'))?.value).toBe(4);
    expect((await again.get('from-b'))?.value).toBe(3);
    await c.stop('a');
  });
});
