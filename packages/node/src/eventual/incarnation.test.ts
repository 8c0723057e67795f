import { describe, expect, it } from 'vitest';
import { eventually, memoryCluster, settle } from '../testing/testkit.js';
import type { EventualOptions } from './options.js';

/**
 * The crdt GC rule: a replica away longer than the tombstone grace period must
 * come back under a new replica id. Here b keeps incrementing a counter that a
 * deleted, while they are apart for longer than the grace period; a collects
 * its tombstone meanwhile. Without the rule the counter comes back on a.
 */
async function deletedCounterAfterLongPartition(incarnations: boolean): Promise<unknown> {
  const options: EventualOptions = {
    maxTtlSeconds: 10,
    defaultTtlSeconds: 10,
    tombstoneGraceMs: 10_000,
    gcIntervalMs: 1_000,
    antiEntropyMs: 1_000,
    incarnations,
  };
  const c = memoryCluster();
  const a = await c.start('a', options);
  const b = await c.start('b', options);
  const na = a.eventual('inc');
  const nb = b.eventual('inc');
  await nb.increment('c', 1);
  await c.time.advance(10);
  await eventually(async () => (await na.get('c'))?.value === 1);
  await c.time.advance(1_500); // a periodic anti-entropy round completes on both sides
  c.network.partition(['a'], ['b']);
  await na.delete('c');
  for (let i = 0; i < 4; i++) {
    await c.time.advance(2_000);
    await nb.increment('c', 1); // renews b's counter (TTL 10 s): still live when they meet again
  }
  await c.time.advance(5_000); // both are now out of contact for longer than the grace period
  expect(await na.get('c')).toBeUndefined();
  expect(a.eventualModule.namespace('inc').replica.stateOf('c')).toBeUndefined(); // a collected its tombstone
  c.network.heal();
  await settle(20);
  await c.time.advance(3_000);
  await settle(20);
  const result = (await na.get('c'))?.value;
  const incarnationsSeen =
    a.eventualModule.namespace('inc').counters.incarnations + b.eventualModule.namespace('inc').counters.incarnations;
  await Promise.all([a.close(), b.close()]);
  return { result, incarnationsSeen };
}

describe('replica incarnations', () => {
  it('without the rule, a deleted counter comes back after a long partition', async () => {
    expect(await deletedCounterAfterLongPartition(false)).toEqual({ result: 5, incarnationsSeen: 0 });
  });

  it('with the rule, the replicas away too long come back under new ids and nothing is resurrected', async () => {
    expect(await deletedCounterAfterLongPartition(true)).toEqual({ result: undefined, incarnationsSeen: 2 });
  });

  it('a node restarted after the grace period discards its state and takes a new replica id', async () => {
    const options: EventualOptions = { maxTtlSeconds: 10, tombstoneGraceMs: 10_000, antiEntropyMs: 1_000 };
    const c = memoryCluster();
    const a = await c.start('a', options);
    let b = await c.start('b', options);
    await b.eventual('r').set('k', 'v');
    await c.time.advance(10);
    await eventually(async () => (await a.eventual('r').get('k'))?.value === 'v');
    await c.time.advance(1_500);
    expect(b.eventualModule.namespace('r').replicaId).toBe('b');
    await c.stop('b');
    await c.time.advance(20_000);
    b = await c.start('b', options);
    const nb = b.eventualModule.namespace('r');
    await nb.ready;
    expect(nb.replicaId).toBe('b~1');
    expect(nb.counters.incarnations).toBe(1);
    // and the id survives a restart
    await c.stop('b');
    b = await c.start('b', options);
    await b.eventualModule.namespace('r').ready;
    expect(b.eventualModule.namespace('r').replicaId).toBe('b~1');
    await Promise.all([a.close(), b.close()]);
  });
});
