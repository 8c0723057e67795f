/**
 * 'majority' operations count replicas this node knows, never this node
 * alone; an explicit `replicas` count raises the bar; the known set is
 * bounded and forgets peers it has not heard from. A delete of a key that
 * is not live here writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { eventually, memoryCluster, settle } from '../testing/testkit.js';
import { KnownReplicas } from './replicas.js';

describe("'majority' eventual operations", () => {
  it('with no replica known, a majority write is not acknowledged by this node alone: it times out', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const ns = a.eventual('solo');
    let outcome: unknown = 'pending';
    const write = ns.set('k', 1, { consistency: 'majority', timeoutMs: 2_000 }).then(
      (e) => e,
      (err: unknown) => err,
    );
    write.then((r) => {
      outcome = r;
    });
    await c.time.advance(1_000);
    expect(outcome).toBe('pending');
    await c.time.advance(1_100);
    expect(await write).toMatchObject({ code: 'timeout', details: { acks: 0, need: 1, known: 0 } });
    expect((await ns.get('k'))?.value).toBe(1); // the local write stays applied, as documented
    const read = ns.get('k', { consistency: 'majority', timeoutMs: 10 }).catch((e: unknown) => e);
    await settle();
    await c.time.advance(20);
    expect(await read).toMatchObject({ code: 'timeout' });
    await c.stop('a');
  });

  it('a replica that becomes known while a majority write waits acknowledges it', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const ns = a.eventual('late');
    await a.eventualModule.namespace('late').ready;
    const write = ns.set('k', 1, { consistency: 'majority', timeoutMs: 5_000 });
    const b = await c.start('b');
    await b.eventualModule.namespace('late').ready; // b's anti-entropy round makes it known to a
    await expect(write).resolves.toMatchObject({ key: 'k', value: 1 });
    expect((await b.eventual('late').get('k'))?.value).toBe(1);
    await c.stop('a');
    await c.stop('b');
  });

  it('replicas: n makes the majority one of n whatever is known; too few known replicas time out', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const na = a.eventual('n');
    b.eventual('n');
    await eventually(() => a.eventualModule.namespace('n').replication.knownReplicas().length === 1);
    await expect(na.set('k', 1, { consistency: 'majority', replicas: 3 })).resolves.toMatchObject({ value: 1 });
    const five = na.set('k', 2, { consistency: 'majority', replicas: 5, timeoutMs: 1_000 });
    const failed = five.catch((e: unknown) => e);
    await c.time.advance(1_100);
    expect(await failed).toMatchObject({ code: 'timeout', details: { acks: 1, need: 2 } });
    await expect(na.set('k', 3, { consistency: 'majority', replicas: 1 })).resolves.toMatchObject({ value: 3 });
    await expect(na.set('k', 4, { consistency: 'majority', replicas: 0 })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await c.stop('a');
    await c.stop('b');
  });

  it('a peer not heard from for replicaTtlMs is no longer a known replica, across a restart too', async () => {
    const c = memoryCluster();
    const a = await c.start('a', { replicaTtlMs: 60_000 });
    const b = await c.start('b');
    a.eventual('age');
    b.eventual('age');
    await eventually(() => a.eventualModule.namespace('age').replication.knownReplicas().length === 1);
    await c.stop('b');
    await c.time.advance(30_000);
    expect(a.eventualModule.namespace('age').replication.knownReplicas()).toEqual(['b']);
    await a.eventualModule.namespace('age').durable();
    await c.stop('a');
    const again = await c.start('a', { replicaTtlMs: 60_000 });
    await again.eventualModule.namespace('age').ready;
    expect(again.eventualModule.namespace('age').replication.knownReplicas()).toEqual(['b']); // persisted
    await c.time.advance(31_000);
    expect(again.eventualModule.namespace('age').replication.knownReplicas()).toEqual([]);
    await c.stop('a');
  });
});

describe('KnownReplicas', () => {
  it('is bounded: a new peer evicts the one heard from longest ago', () => {
    const k = new KnownReplicas('me', 60_000, 3);
    expect(k.heard('me', 0)).toBeUndefined();
    expect(k.heard('p1', 0)).toBe('new');
    expect(k.heard('p2', 10)).toBe('new');
    expect(k.heard('p3', 20)).toBe('new');
    expect(k.heard('p1', 30)).toBeUndefined(); // refreshed, not persisted again so soon
    expect(k.heard('p4', 40)).toBe('new'); // evicts p2, the stalest
    expect(k.list(40)).toEqual(['p1', 'p3', 'p4']);
    expect(k.heard('p1', 6_040)).toBe('refresh'); // a tenth of the TTL later: persist the new age
    expect(k.list(60_021)).toEqual(['p1', 'p4']); // p3 aged out
  });

  it('loads pairs and the bare ids an older meta holds (heard now)', () => {
    const k = new KnownReplicas('me', 60_000);
    k.load([['p1', 1_000], 'p2', 'me', ['p3', 1.5] as unknown as [string, number]], 50_000);
    expect(k.list(50_000)).toEqual(['p1', 'p2']);
    expect(k.list(61_001)).toEqual(['p2']);
    expect(k.toJSON()).toEqual([['p2', 50_000]]);
  });
});

describe('an eventual delete of a key that is not live here', () => {
  it('answers false and writes nothing: the key a peer holds survives (no tombstone spreads)', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    c.network.partition(['a'], ['b']);
    await a.eventual('d').set('k', 'kept');
    const nb = b.eventual('d');
    await b.eventualModule.namespace('d').ready;
    const batches = b.commits.batches;
    expect(await nb.delete('k')).toBe(false); // b has not seen it: HTTP answers 404
    expect(await nb.delete('never')).toBe(false);
    expect(b.eventualModule.namespace('d').replica.stateOf('k')).toBeUndefined();
    expect(b.commits.batches).toBe(batches); // nothing was written
    c.network.heal();
    await eventually(async () => {
      await b.eventualModule.namespace('d').replication.antiEntropyWith('a');
      await a.eventualModule.namespace('d').replication.antiEntropyWith('b');
      return (await nb.get('k')) !== undefined;
    });
    expect((await a.eventual('d').get('k'))?.value).toBe('kept');
    expect((await nb.get('k'))?.value).toBe('kept');
    // Once seen here, the delete removes it everywhere.
    expect(await nb.delete('k')).toBe(true);
    await eventually(async () => {
      await a.eventualModule.namespace('d').replication.antiEntropyWith('b');
      return (await a.eventual('d').get('k')) === undefined;
    });
    await c.stop('a');
    await c.stop('b');
  });

  it('an expired or deleted key is not live: deleting it again writes nothing', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const ns = a.eventual('x');
    await ns.set('short', 1, { ttl: 1 });
    await ns.set('gone', 1);
    expect(await ns.delete('gone')).toBe(true);
    await c.time.advance(1_500);
    await a.commits.idle();
    const batches = a.commits.batches;
    expect(await ns.delete('short')).toBe(false);
    expect(await ns.delete('gone')).toBe(false);
    expect(a.commits.batches).toBe(batches);
    expect(a.eventualModule.namespace('x').replica.stateOf('short')?.type).toBe('register');
    await c.stop('a');
  });
});
