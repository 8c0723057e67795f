/**
 * `gossipBeforeDurable`: a local write is gossiped while its batch is being
 * written. A peer may then hold a write its origin never made durable, so
 * such a write ends `outcome_unknown` (never "not written"), it reaches every
 * replica (its origin too, by anti-entropy), and a node restarted after an
 * unclean stop writes under a new replica id with its state kept: the dot of
 * a lost write is never given to another one.
 */
import { type KVStorage, StorageFullError, type StorageOp } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import type { ParleyNodeInternals } from '../node.js';
import { eventually, memoryCluster } from '../testing/testkit.js';
import type { EventualOptions } from './options.js';

const early: EventualOptions = { gossipBeforeDurable: true };

/** Holds the node's next batch until `release()`, then runs it (or fails it with `fail`). */
function holdNextBatch(node: ParleyNodeInternals, fail?: () => Error): { release: () => void; held: () => boolean } {
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
    if (fail) throw fail();
    return real(ops);
  };
  return { release, held: () => calls > 0 };
}

/** Both nodes replicate the namespace and know each other (one write went from a to b). */
async function warm(c: ReturnType<typeof memoryCluster>, a: ParleyNodeInternals, b: ParleyNodeInternals) {
  await a.eventual('e').set('warm', 0);
  await c.time.advance(10);
  await eventually(async () => (await b.eventual('e').get('warm')) !== undefined);
}

describe('gossip before durable', () => {
  it('a peer sees the write while its batch is still being written', async () => {
    const c = memoryCluster();
    const a = await c.start('a', early);
    const b = await c.start('b', early);
    const na = a.eventual('e');
    const nb = b.eventual('e');
    await warm(c, a, b);
    const hold = holdNextBatch(a);
    let acked = false;
    const write = na.set('k', 'v').then(() => {
      acked = true;
    });
    await eventually(hold.held);
    await c.time.advance(0); // the gossip timer turn
    await eventually(async () => (await nb.get('k'))?.value === 'v');
    expect(acked).toBe(false);
    expect(await na.get('k')).toBeUndefined(); // durable before applied, on its own node still
    hold.release();
    await write;
    expect((await na.get('k'))?.value).toBe('v');
    await c.stop('a');
    await c.stop('b');
  });

  it('without it, the peer sees the write only once it is durable', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const na = a.eventual('e');
    const nb = b.eventual('e');
    await warm(c, a, b);
    const hold = holdNextBatch(a);
    const write = na.set('k', 'v');
    await eventually(hold.held);
    await c.time.advance(10);
    expect(await nb.get('k')).toBeUndefined();
    hold.release();
    await write;
    await c.time.advance(10);
    await eventually(async () => (await nb.get('k'))?.value === 'v');
    await c.stop('a');
    await c.stop('b');
  });

  it('a write whose batch fails ends outcome_unknown, and reaches both replicas', async () => {
    const c = memoryCluster();
    const a = await c.start('a', early);
    const b = await c.start('b', early);
    const na = a.eventual('e');
    const nb = b.eventual('e');
    await warm(c, a, b);
    const hold = holdNextBatch(a, () => new StorageFullError('kv', 'No space left on device'));
    const write = na.set('k', 'v').then(
      () => 'ok',
      (e: { code: string; details: { cause?: string } }) => `${e.code}/${e.details.cause}`,
    );
    await eventually(hold.held);
    await c.time.advance(0);
    await eventually(async () => (await nb.get('k'))?.value === 'v');
    hold.release();
    expect(await write).toBe('outcome_unknown/storage_full');
    expect(await na.get('k')).toBeUndefined();
    // Anti-entropy brings it back to its origin (in memory: that disk is faulted).
    await a.eventualModule.namespace('e').replication.antiEntropyWith('b');
    expect((await na.get('k'))?.value).toBe('v');
    await c.stop('a');
    await c.stop('b');
  });

  it('after a crash the node writes under a new replica id, state kept; after a clean stop it keeps its id', async () => {
    const c = memoryCluster();
    const a = await c.start('a', early);
    const b = await c.start('b', early);
    await warm(c, a, b);
    await a.eventual('e').set('kept', 1);
    await a.eventual('e').increment('n', 2);
    const idOf = (n: ParleyNodeInternals) => n.eventualModule.namespace('e').replicaId;
    expect(idOf(a)).toBe('a');
    // A write gossiped, then lost with its batch in the crash.
    const hold = holdNextBatch(a);
    const lost = a
      .eventual('e')
      .set('lost', 'x')
      .then(
        () => 'ok',
        (e: { code: string }) => e.code,
      );
    await eventually(hold.held);
    await c.time.advance(0);
    await eventually(async () => (await b.eventual('e').get('lost'))?.value === 'x');
    const crashing = c.crash('a');
    hold.release();
    await crashing;
    expect(await lost).toBe('outcome_unknown');

    let again = await c.start('a', early);
    const na = again.eventual('e');
    expect((await na.get('kept'))?.value).toBe(1);
    expect(idOf(again)).toBe('a~1');
    expect(again.eventualModule.namespace('e').counters.writerRotations).toBe(1);
    expect(await na.get('lost')).toBeUndefined(); // its dot lives on at b only
    // The next write takes a dot of the new id; the counter keeps the old id's share.
    await na.set('after', 2);
    expect((await na.increment('n', 3)).value).toBe(5);
    await c.time.advance(10);
    await again.eventualModule.namespace('e').replication.antiEntropyWith('b');
    await b.eventualModule.namespace('e').replication.antiEntropyWith('a');
    for (const n of [again, b]) {
      const ns = n.eventual('e');
      expect([(await ns.get('lost'))?.value, (await ns.get('after'))?.value, (await ns.get('n'))?.value]).toEqual([
        'x',
        2,
        5,
      ]);
    }
    await c.stop('a');
    again = await c.start('a', early);
    expect((await again.eventual('e').get('after'))?.value).toBe(2);
    expect(idOf(again)).toBe('a~1');
    expect(again.eventualModule.namespace('e').counters.writerRotations).toBe(0);
    await c.stop('a');
    await c.stop('b');
  });
});
