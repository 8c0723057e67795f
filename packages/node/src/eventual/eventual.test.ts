import { encodeDelta, NamespaceReplica } from '@parley/crdt';
import { isParleyError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import type { EventualChange } from '../api.js';
import { eventually, memoryCluster, settle } from '../testing/testkit.js';
import { encodeGossip } from './wire.js';

describe('eventual namespace on one node', () => {
  it('set, get, increment, delete and list, with typed errors', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('deploy');
    const e = await ns.set('rollout', { pct: 25 }, { ttl: 600 });
    expect(e).toMatchObject({ namespace: 'deploy', key: 'rollout', value: { pct: 25 }, ttlSeconds: 600 });
    expect(e.expiresAt - e.updatedAt).toBe(600_000);
    expect((await ns.get('rollout'))?.value).toEqual({ pct: 25 });
    expect((await ns.increment('restarts')).value).toBe(1);
    expect((await ns.increment('restarts', 4)).value).toBe(5);
    expect(await ns.delete('rollout')).toBe(true);
    expect(await ns.delete('rollout')).toBe(false);
    expect(await ns.get('rollout')).toBeUndefined();
    await expect(ns.set('x', 1, { ttl: 31 * 24 * 3600 })).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(ns.set('big', 'x'.repeat(1_048_577))).rejects.toMatchObject({ code: 'value_too_large' });
    await expect(ns.increment('restarts', 1.5)).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(() => node.eventual('bad/name')).toThrow(/namespace/);
    expect(await ns.get('x')).toBeUndefined();
    await node.close();
  });

  it('limits live keys per namespace (namespace_full) and writes nothing', async () => {
    const c = memoryCluster();
    const node = await c.start('a', { maxLiveKeys: 2 });
    const ns = node.eventual('small');
    await ns.set('a', 1);
    await ns.set('b', 2);
    await expect(ns.set('c', 3)).rejects.toMatchObject({ code: 'namespace_full' });
    expect(await ns.get('c')).toBeUndefined();
    await ns.set('a', 10); // overwriting a live key is fine
    await node.close();
  });

  it('lists with q, filter, sort and cursor (coord grammar)', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('jobs');
    for (let i = 0; i < 7; i++) {
      await ns.set(`job-${i}`, { status: i % 2 === 0 ? 'open' : 'done', n: i });
      await c.time.advance(10);
    }
    await ns.set('other', { status: 'open', n: 99 });
    const open = await ns.list({ filter: 'status == "open" and n < 50' });
    expect(open.items.map((e) => e.key)).toEqual(['job-0', 'job-2', 'job-4', 'job-6']);
    const page1 = await ns.list({ q: 'JOB', sortBy: 'updated_at', sortOrder: 'desc', limit: 3 });
    expect(page1.items.map((e) => e.key)).toEqual(['job-6', 'job-5', 'job-4']);
    const page2 = await ns.list({
      q: 'JOB',
      sortBy: 'updated_at',
      sortOrder: 'desc',
      limit: 3,
      cursor: page1.nextCursor!,
    });
    expect(page2.items.map((e) => e.key)).toEqual(['job-3', 'job-2', 'job-1']);
    const page3 = await ns.list({
      q: 'JOB',
      sortBy: 'updated_at',
      sortOrder: 'desc',
      limit: 3,
      cursor: page2.nextCursor!,
    });
    expect(page3.items.map((e) => e.key)).toEqual(['job-0']);
    expect(page3.nextCursor).toBeNull();
    await expect(ns.list({ filter: 'status ==' })).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(ns.list({ cursor: page1.nextCursor! })).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(ns.list({ limit: 1001 })).rejects.toMatchObject({ code: 'invalid_argument' });
    await node.close();
  });

  it("refuses a cursor holding Infinity, as coord's lists do", async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('jobs');
    await ns.set('a', 1);
    // 1e400 parses to Infinity: no cursor a list issues can hold it.
    const cursor = Buffer.from('["created_at","asc",1e400,"a"]', 'utf8').toString('base64url');
    await expect(ns.list({ sortBy: 'created_at', cursor })).rejects.toMatchObject({ code: 'invalid_argument' });
    await node.close();
  });

  it('bounds a page by its value bytes (8 MiB), resuming with the cursor', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('big');
    const value = 'x'.repeat(1_000_000);
    for (let i = 0; i < 10; i++) await ns.set(`k${i}`, value);
    const first = await ns.list({ limit: 100 });
    expect(first.items.map((e) => e.key)).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7']);
    expect(first.nextCursor).not.toBeNull();
    const rest = await ns.list({ limit: 100, cursor: first.nextCursor! });
    expect(rest.items.map((e) => e.key)).toEqual(['k8', 'k9']);
    expect(rest.nextCursor).toBeNull();
    await node.close();
  });

  it('reports every change once with its origin, and expiry as a change', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('w');
    const seen: EventualChange[] = [];
    const stop = ns.watch({ prefix: 'k' }, (ch) => seen.push(ch));
    await ns.set('k1', 'v', { ttl: 5 });
    await ns.set('other', 'v');
    await ns.increment('k2');
    await ns.delete('k2');
    await ns.delete('k2'); // already absent: no change to report
    await c.time.advance(5_001);
    expect(seen.map((s) => [s.type, s.key, s.origin])).toEqual([
      ['set', 'k1', 'local'],
      ['set', 'k2', 'local'],
      ['delete', 'k2', 'local'],
      ['expire', 'k1', 'local'],
    ]);
    stop();
    await node.close();
  });

  it('changes() iterates changes and ends when the node closes', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('it');
    const got: string[] = [];
    const done = (async () => {
      for await (const ch of ns.changes({ prefix: 'a' })) got.push(`${ch.type}:${ch.key}`);
    })();
    await settle();
    await ns.set('a1', 1);
    await ns.set('b1', 1);
    await ns.delete('a1');
    await node.close();
    await done;
    expect(got).toEqual(['set:a1', 'delete:a1']);
  });

  it('a changes() iterator that falls too far behind fails with unavailable', async () => {
    const c = memoryCluster();
    const node = await c.start('a', { maxQueuedChanges: 3 });
    const ns = node.eventual('slow');
    const it = ns.changes()[Symbol.asyncIterator]();
    const first = it.next();
    await ns.set('k0', 0);
    expect((await first).value?.key).toBe('k0');
    for (let i = 1; i <= 5; i++) await ns.set(`k${i}`, i);
    const results: string[] = [];
    await expect(
      (async () => {
        for (;;) {
          const r = await it.next();
          if (r.done) return;
          results.push(r.value.key);
        }
      })(),
    ).rejects.toMatchObject({ code: 'unavailable' });
    expect(results).toEqual(['k1', 'k2', 'k3']);
    await node.close();
  });

  it('is durable before acknowledged: every acknowledged write survives a crash', async () => {
    const c = memoryCluster();
    let node = await c.start('a');
    const ns = node.eventual('d');
    const writes = [];
    for (let i = 0; i < 50; i++) writes.push(ns.set(`k${i}`, i));
    await ns.increment('n', 7);
    await Promise.all(writes);
    expect(node.commits.batches).toBeLessThan(10); // writes issued together share fsyncs
    await c.crash('a');
    node = await c.start('a');
    const again = node.eventual('d');
    expect((await again.list({ limit: 1000 })).items).toHaveLength(51);
    expect((await again.get('n'))?.value).toBe(7);
    expect((await again.increment('n')).value).toBe(8);
    await node.close();
  });

  it('folds the log into snapshot chunks and restores from them', async () => {
    const c = memoryCluster();
    let node = await c.start('a', { compactLogBytes: 2_000 });
    const ns = node.eventual('snap');
    for (let i = 0; i < 300; i++) await ns.set(`k${String(i).padStart(3, '0')}`, { i });
    await ns.delete('k007');
    const kv = node.context.storage.kv;
    expect((await kv.loadRange(['ev', 'snap', 's'])).length).toBeGreaterThan(0);
    expect((await kv.loadRange(['ev', 'snap', 'l'])).length).toBeLessThan(100);
    await c.stop('a');
    node = await c.start('a', { compactLogBytes: 2_000 });
    const st = await node.status();
    expect(st.namespaces).toEqual([]); // not opened yet
    const again = node.eventual('snap');
    expect((await again.list({ limit: 1000 })).items).toHaveLength(299);
    expect((await again.get('k123'))?.value).toEqual({ i: 123 });
    const s = (await node.status()).namespaces[0]!;
    expect(s).toMatchObject({ name: 'snap', kind: 'eventual', keys: 299 });
    expect(s.bytes).toBeGreaterThan(0);
    await node.close();
  });
});

describe('eventual namespaces between nodes', () => {
  it('gossip delivers a write to watchers on the other nodes', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const d = await c.start('d');
    const nb = b.eventual('g');
    const nd = d.eventual('g');
    const got: EventualChange[] = [];
    nb.watch({}, (ch) => got.push(ch));
    nd.watch({}, (ch) => got.push(ch));
    await a.eventual('g').set('x', 'hello');
    await c.time.advance(5); // gossip delay
    await eventually(() => got.length === 2);
    expect(got.every((ch) => ch.origin === a.peerId && ch.entry?.value === 'hello')).toBe(true);
    await Promise.all([a.close(), b.close(), d.close()]);
  });

  it('deltas merged from peers share fsyncs within remoteCommitDelayMs, and are durable after it', async () => {
    const c = memoryCluster();
    const quiet = { antiEntropyMs: 3_600_000 }; // gossip only
    const a = await c.start('a', quiet);
    const b = await c.start('b', quiet);
    const nb = b.eventual('g');
    const got: string[] = [];
    nb.watch({}, (ch) => got.push(ch.key));
    const na = a.eventual('g');
    await na.set('warm', 0);
    await c.time.advance(60);
    await eventually(() => got.length === 1);
    await c.time.advance(60); // the warm-up's own batch is written
    await settle();
    const before = b.commits.batches;
    for (let i = 0; i < 20; i++) {
      await na.set(`k${i}`, i);
      await c.time.advance(2); // each write leaves in its own gossip message
      await eventually(() => got.length === i + 2);
    }
    // 20 deltas merged within 40 ms of simulated time: at most one write of them so far.
    expect(b.commits.batches - before).toBeLessThanOrEqual(1);
    await c.time.advance(50);
    await eventually(() => b.commits.batches - before >= 1);
    await b.commits.idle();
    expect(b.commits.batches - before).toBeLessThanOrEqual(2);
    // Written, not just applied: a crash now loses none of them.
    await c.crash('b');
    const again = (await c.start('b', quiet)).eventual('g');
    expect((await again.list({ limit: 100 })).items).toHaveLength(21);
    await Promise.all([a.close(), c.stop('b')]);
  });

  it('anti-entropy repairs a partition on reconnect, O(difference)', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const na = a.eventual('p');
    const nb = b.eventual('p');
    for (let i = 0; i < 100; i++) await na.set(`k${i}`, i);
    await c.time.advance(5);
    await eventually(async () => (await nb.list({ limit: 1000 })).items.length === 100);
    c.network.partition(['a'], ['b']);
    await na.set('k1', 'changed');
    await nb.increment('counter', 2);
    await na.increment('counter', 3);
    await c.time.advance(5);
    const rounds: Array<{ repairedEntries: number; bytes: number }> = [];
    b.context.events.on('antientropy:round', (r) => rounds.push(r));
    c.network.heal();
    await eventually(async () => (await nb.get('k1'))?.value === 'changed' && (await na.get('counter'))?.value === 5);
    expect((await nb.get('counter'))?.value).toBe(5);
    const repaired = rounds.reduce((s, r) => s + r.repairedEntries, 0);
    expect(repaired).toBe(2); // k1 and the counter, not the 100 keys
    expect(Math.max(...rounds.map((r) => r.bytes))).toBeLessThan(400);
    await Promise.all([a.close(), b.close()]);
  });

  it('opening a namespace pulls its state from connected peers', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    await a.eventual('late').set('k', 'v');
    const b = await c.start('b');
    await settle();
    const nb = b.eventual('late');
    await eventually(async () => (await nb.get('k'))?.value === 'v');
    await Promise.all([a.close(), b.close()]);
  });

  it('drops undecodable, foreign and over-limit gossip with typed, counted errors and keeps working', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b', { maxValueBytes: 1_000 });
    const nb = b.eventual('h');
    a.eventual('h');
    await settle();
    const codes: string[] = [];
    b.context.events.on('reject:decode', (r) => codes.push(r.code));
    const topic = 'parley/ev/1/h';
    await a.context.transport.publish(topic, new Uint8Array([1, 2, 3, 4]));
    const foreign = new NamespaceReplica({ namespace: 'other', replicaId: 'evil' });
    const big = new NamespaceReplica({ namespace: 'h', replicaId: 'evil' });
    const t = c.time.nowMs();
    await a.context.transport.publish(
      topic,
      encodeGossip([
        encodeDelta(foreign.set('x', 1, t)),
        new Uint8Array([9, 9]),
        encodeDelta(big.set('huge', 'y'.repeat(5_000), t)),
        encodeDelta(big.set('fine', 'ok', t)),
      ]),
    );
    await eventually(() => codes.length === 4);
    expect(codes).toEqual(['decode_error', 'invalid_argument', 'decode_error', 'value_too_large']);
    await eventually(async () => (await nb.get('fine'))?.value === 'ok');
    expect(await nb.get('huge')).toBeUndefined();
    const st = (
      b.eventualModule.namespace('h') as { counters: { decodeRejections: number; overLimitRejections: number } }
    ).counters;
    expect(st.decodeRejections).toBe(3);
    expect(st.overLimitRejections).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });

  it('refuses and counts remote writes stamped beyond the drift bound', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const nb = b.eventual('drift');
    a.eventual('drift');
    await settle();
    const drift: number[] = [];
    b.context.events.on('reject:drift', (r) => drift.push(r.count));
    const ahead = new NamespaceReplica({ namespace: 'drift', replicaId: 'skewed' });
    await a.context.transport.publish(
      'parley/ev/1/drift',
      encodeGossip([encodeDelta(ahead.set('future', 1, c.time.nowMs() + 120_000))]),
    );
    await eventually(() => drift.length === 1);
    expect(await nb.get('future')).toBeUndefined();
    await Promise.all([a.close(), b.close()]);
  });

  it('majority writes and reads wait for a majority of known replicas, else time out', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const d = await c.start('d');
    const na = a.eventual('m');
    b.eventual('m');
    d.eventual('m');
    await eventually(() => (a.eventualModule.namespace('m').replication.knownReplicas().length as number) === 2);
    await na.set('k', 1, { consistency: 'majority' });
    c.network.partition(['a'], ['b', 'd']);
    const p = na.set('k', 2, { consistency: 'majority', timeoutMs: 1_000 });
    const err = await p.catch((e: unknown) => e);
    expect(isParleyError(err, 'timeout')).toBe(true);
    expect((await na.get('k'))?.value).toBe(2); // stays applied locally
    c.network.heal();
    await b.eventual('m').set('k', 3);
    // a majority read merges what the others hold before answering
    await eventually(async () => (await na.get('k', { consistency: 'majority' }))?.value === 3);
    await Promise.all([a.close(), b.close(), d.close()]);
  });
});

describe('a peer that keeps sending bad input', () => {
  it('is scored down: its gossip is ignored for a while, anti-entropy still converges', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const nb = b.eventual('score');
    const na = a.eventual('score');
    await settle();
    let rejected = 0;
    b.context.events.on('reject:decode', () => rejected++);
    for (let i = 0; i < 25; i++) await a.context.transport.publish('parley/ev/1/score', new Uint8Array([i]));
    await eventually(() => rejected >= 20);
    const impl = b.eventualModule.namespace('score');
    expect(impl.replication.muted(a.peerId)).toBe(true);
    await na.set('k', 'v');
    await c.time.advance(5);
    await settle(10);
    expect(impl.counters.mutedGossip).toBeGreaterThan(0);
    // The namespace keeps working: anti-entropy pulls the write anyway.
    await c.time.advance(1_600);
    await eventually(async () => (await nb.get('k'))?.value === 'v');
    // After the mute period the peer's gossip is heard again.
    await c.time.advance(61_000);
    expect(impl.replication.muted(a.peerId)).toBe(false);
    await Promise.all([a.close(), b.close()]);
  });
});
