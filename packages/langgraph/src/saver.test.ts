/**
 * ParleySaver beyond the conformance suite: payloads larger than the value
 * limit, readers racing writers, single-writer ownership refused by the store,
 * lifetimes, pending-write merging and bad input.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { isParleyError } from '@parley/interface';
import type { ParleyNodeInternals } from '@parley/node/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { threadNamespace } from './keys.js';
import { ParleySaver } from './saver.js';
import { memoryNode } from './testing.js';

let node: ParleyNodeInternals;
let n = 0;
const meta = { source: 'loop' as const, step: 0, parents: {} };

beforeAll(async () => {
  node = await memoryNode();
});
afterAll(async () => {
  await node?.close();
});

function saver(options: Partial<ConstructorParameters<typeof ParleySaver>[0]> = {}): ParleySaver {
  return new ParleySaver({ node, namespace: `saver-${++n}`, ...options });
}

function checkpoint(values: Record<string, unknown>, version = 1) {
  const cp = emptyCheckpoint();
  cp.id = uuid6(-3);
  cp.channel_values = values;
  cp.channel_versions = Object.fromEntries(Object.keys(values).map((k) => [k, version]));
  return cp;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('payloads larger than the value limit', () => {
  it('a 2 MB channel value round-trips in chunks, each entry within the limit', async () => {
    const s = saver();
    const big = 'ü"\\'.repeat(350_000); // escapes and two-byte characters: 2.1 MB as JSON
    const cp = checkpoint({ doc: big, small: 1 });
    const config = await s.put({ configurable: { thread_id: 't' } }, cp, meta, cp.channel_versions);
    const tuple = await s.getTuple(config);
    expect(tuple?.checkpoint.channel_values).toEqual({ doc: big, small: 1 });
    const entries = await node.strong(threadNamespace(s.namespace, 't')).list({ limit: 1000 });
    const chunks = entries.items.filter((e) => (e.value as { k?: string }).k === 'x');
    expect(chunks.length).toBeGreaterThanOrEqual(8);
    for (const e of entries.items) expect(Buffer.byteLength(JSON.stringify(e.value))).toBeLessThan(1_048_576);
  });

  it('a reader never sees half a checkpoint or half a write while they are replaced', async () => {
    const s = saver({ chunkBytes: 1024 });
    const cp = checkpoint({ doc: 'x'.repeat(20_000) });
    const config = await s.put({ configurable: { thread_id: 'r' } }, cp, meta, cp.channel_versions);
    // An error write (a special channel) is replaced on every putWrites: each time by another letter.
    let writing = true;
    const writer = (async () => {
      for (const letter of 'abcdefghij') await s.putWrites(config, [['__error__', letter.repeat(8_000)]], 'task');
    })().finally(() => {
      writing = false;
    });
    let reads = 0;
    while ((writing || reads === 0) && reads < 5_000) {
      const t = await s.getTuple(config);
      expect(t?.checkpoint.channel_values.doc).toHaveLength(20_000);
      const w = t?.pendingWrites?.[0]?.[2] as string | undefined;
      if (w !== undefined) {
        expect(w).toHaveLength(8_000);
        expect(new Set(w).size).toBe(1);
      }
      reads++;
    }
    await writer;
    const last = await s.getTuple(config);
    expect(last?.pendingWrites).toEqual([['task', '__error__', 'j'.repeat(8_000)]]);
    // The replaced chunk sets are gone: every chunk left is one a live entry names.
    const entries = (await node.strong(threadNamespace(s.namespace, 'r')).list({ limit: 1000 })).items;
    const named = entries.reduce((sum, e) => sum + ((e.value as { px?: { n: number } }).px?.n ?? 0), 0);
    expect(entries.filter((e) => (e.value as { k?: string }).k === 'x')).toHaveLength(named);
    expect(named).toBeGreaterThan(20);
  });

  it('a checkpoint being written is absent or whole to a concurrent reader', async () => {
    const s = saver({ chunkBytes: 512 });
    const cp = checkpoint({ doc: 'y'.repeat(50_000) });
    const config = { configurable: { thread_id: 'w', checkpoint_ns: '', checkpoint_id: cp.id } };
    let done = false;
    const put = s.put({ configurable: { thread_id: 'w' } }, cp, meta, cp.channel_versions).finally(() => {
      done = true;
    });
    const seen: Array<number | 'absent'> = [];
    const look = async () => {
      const t = await s.getTuple(config);
      seen.push(t === undefined ? 'absent' : ((t.checkpoint.channel_values.doc as string | undefined)?.length ?? 0));
    };
    while (!done && seen.length < 5_000) await look();
    await put;
    await look();
    expect(seen.every((l) => l === 'absent' || l === 50_000)).toBe(true);
    expect(seen.at(-1)).toBe(50_000);
  });
});

describe('single-writer ownership', () => {
  it('a writer that lost the thread is refused by the store, and the chain does not fork', async () => {
    const ns = `own-${++n}`;
    const a = new ParleySaver({ node, namespace: ns });
    const b = new ParleySaver({ node, namespace: ns });
    const leaseA = await a.ownThread('t', { holder: 'a', ttl: 1, renewEveryMs: false });
    const c1 = checkpoint({ step: 1 });
    const at1 = await a.put({ configurable: { thread_id: 't' } }, c1, meta, c1.channel_versions);
    // While a holds it, b cannot take the thread.
    expect(await rejection(b.ownThread('t', { holder: 'b' }))).toMatchObject({ code: 'lock_held' });
    // a stops renewing (a paused process): b queues and gets the thread once a's TTL lapses.
    const leaseB = await b.ownThread('t', { holder: 'b', ttl: 10, wait: 30 });
    expect(leaseB.fence).toBeGreaterThan(leaseA.fence);
    const c2 = checkpoint({ step: 2 }, 2);
    const at2 = await b.put(at1, c2, meta, c2.channel_versions);
    // a, unaware, extends the chain from c1: refused by the store.
    const forked = checkpoint({ step: 99 }, 2);
    const err = await rejection(a.put(at1, forked, meta, forked.channel_versions));
    expect(isParleyError(err, 'fence_stale')).toBe(true);
    expect(leaseA.lost).toBe(true);
    // Known lost: a's later writes fail at once, before reaching the store.
    expect(await rejection(a.putWrites(at1, [['x', 1]], 'task'))).toMatchObject({ code: 'lease_lost' });
    expect(await rejection(a.deleteThread('t'))).toMatchObject({ code: 'lease_lost' });
    const history = [];
    for await (const t of b.list({ configurable: { thread_id: 't' } })) history.push(t);
    expect(history.map((t) => t.checkpoint.id)).toEqual([c2.id, c1.id]);
    expect(history[0]?.parentConfig?.configurable?.checkpoint_id).toBe(c1.id);
    expect((await b.getTuple(at2))?.checkpoint.channel_values).toEqual({ step: 2 });
    await leaseB.release();
    // Released: the next owner goes on from b's checkpoint.
    const c = new ParleySaver({ node, namespace: ns });
    await c.ownThread('t', { holder: 'c' });
    expect((await c.getTuple({ configurable: { thread_id: 't' } }))?.checkpoint.id).toBe(c2.id);
    await c.close();
  });

  it('a stale owner’s putWrites and deleteThread are refused and change nothing', async () => {
    const ns = `own-${++n}`;
    const a = new ParleySaver({ node, namespace: ns });
    const b = new ParleySaver({ node, namespace: ns });
    await a.ownThread('t', { holder: 'a', ttl: 1, renewEveryMs: false });
    const c1 = checkpoint({ step: 1 });
    const at1 = await a.put({ configurable: { thread_id: 't' } }, c1, meta, c1.channel_versions);
    await b.ownThread('t', { holder: 'b', wait: 30 });
    expect(await rejection(a.putWrites(at1, [['x', 1]], 'task'))).toMatchObject({ code: 'fence_stale' });
    const c = new ParleySaver({ node, namespace: ns });
    await c.ownThread('u', { holder: 'c', ttl: 1, renewEveryMs: false });
    const u1 = checkpoint({ step: 1 });
    await c.put({ configurable: { thread_id: 'u' } }, u1, meta, u1.channel_versions);
    await b.ownThread('u', { holder: 'b', wait: 30 });
    expect(await rejection(c.deleteThread('u'))).toMatchObject({ code: 'fence_stale' });
    expect((await b.getTuple({ configurable: { thread_id: 'u' } }))?.checkpoint.id).toBe(u1.id);
    expect((await b.getTuple(at1))?.pendingWrites).toEqual([]);
    await b.close();
  });

  it('the owner option takes the thread before the first read', async () => {
    const ns = `own-${++n}`;
    const a = new ParleySaver({ node, namespace: ns, owner: { holder: 'a', ttl: 30 } });
    const b = new ParleySaver({ node, namespace: ns, owner: { holder: 'b', ttl: 30 } });
    expect(await a.getTuple({ configurable: { thread_id: 't' } })).toBeUndefined();
    expect(a.lease('t')?.holder).toBe('a');
    expect(await rejection(b.getTuple({ configurable: { thread_id: 't' } }))).toMatchObject({ code: 'lock_held' });
    await a.close();
    expect(await b.getTuple({ configurable: { thread_id: 't' } })).toBeUndefined();
    expect(b.lease('t')?.fence).toBeGreaterThan(0);
    await b.close();
  });

  it('renewal keeps the thread past its TTL; a lost renewal is reported', async () => {
    const s = saver();
    const lease = await s.ownThread('t', { holder: 'a', ttl: 1, renewEveryMs: 200 });
    const other = new ParleySaver({ node, namespace: s.namespace });
    expect(await rejection(other.ownThread('t', { holder: 'b', wait: 2 }))).toMatchObject({ code: 'lock_held' });
    expect(lease.lost).toBe(false);
    const lost = new Promise<Error>((resolve) => lease.onLost(resolve));
    lease.stop();
    await other.ownThread('t', { holder: 'b', wait: 30 });
    await expect(lease.renew()).rejects.toMatchObject({ code: 'fence_stale' });
    expect(((await lost) as { code?: string }).code).toBe('fence_stale');
    await other.close();
  });
});

describe('lifetimes', () => {
  it('channel values a checkpoint carries over are written again to outlive it', async () => {
    const s = saver({ ttlSeconds: 1 });
    const c1 = checkpoint({ a: 'kept', b: 1 });
    const at1 = await s.put({ configurable: { thread_id: 't' } }, c1, meta, c1.channel_versions);
    const ns = node.strong(threadNamespace(s.namespace, 't'));
    const before = await ns.get('b::a:1');
    // More than the checkpoint TTL later, a checkpoint changes only b and carries a over.
    const started = Date.now();
    while (Date.now() - started < 1_100) await new Promise((r) => setTimeout(r, 50));
    const c2 = checkpoint({ a: 'kept', b: 2 });
    c2.channel_versions = { a: 1, b: 2 };
    const at2 = await s.put(at1, c2, meta, { b: 2 });
    const head = await ns.get(`c::${c2.id}`);
    const after = await ns.get('b::a:1');
    expect(after?.version).not.toBe(before?.version);
    expect(after?.expiresAt).toBeGreaterThanOrEqual(head?.expiresAt ?? Infinity);
    const index = await node.strong(s.namespace).get('t');
    expect(index?.expiresAt).toBeGreaterThanOrEqual(head?.expiresAt ?? Infinity);
    expect((await s.getTuple(at2))?.checkpoint.channel_values).toEqual({ a: 'kept', b: 2 });
  });
});

describe('pending writes', () => {
  it('a retried task keeps its first writes; special writes are replaced; order is (path, task, idx)', async () => {
    const s = saver();
    const cp = checkpoint({});
    const config = await s.put({ configurable: { thread_id: 't' } }, cp, meta, {});
    await s.putWrites(
      config,
      [
        ['a', 1],
        ['b', 2],
      ],
      'task-2',
      '~b',
    );
    await s.putWrites(config, [['a', 'again']], 'task-2', '~b');
    await s.putWrites(config, [['__interrupt__', 'first']], 'task-1', '~c');
    await s.putWrites(config, [['__interrupt__', 'second']], 'task-1', '~c');
    await s.putWrites(config, [['c', 3]], 'task-3', '~a');
    const t = await s.getTuple(config);
    expect(t?.pendingWrites).toEqual([
      ['task-3', 'c', 3],
      ['task-2', 'a', 1],
      ['task-2', 'b', 2],
      ['task-1', '__interrupt__', 'second'],
    ]);
  });

  it('concurrent putWrites of different tasks and one task all land', async () => {
    const s = saver();
    const cp = checkpoint({});
    const config = await s.put({ configurable: { thread_id: 't' } }, cp, meta, {});
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => s.putWrites(config, [['v', i]], `task-${i}`)),
      s.putWrites(config, [['__error__', 'e']], 'task-0'),
    ]);
    const t = await s.getTuple(config);
    expect(t?.pendingWrites).toHaveLength(7);
  });
});

describe('bad input', () => {
  it('is refused with invalid_argument and writes nothing', async () => {
    const s = saver();
    const cp = checkpoint({ a: 1 });
    for (const config of [{}, { configurable: { thread_id: 'a\u0001b' } }, { configurable: { thread_id: '' } }]) {
      expect(await rejection(s.put(config, cp, meta, cp.channel_versions))).toMatchObject({
        code: 'invalid_argument',
      });
    }
    expect(await rejection(s.putWrites({ configurable: { thread_id: 't' } }, [['a', 1]], 'task'))).toMatchObject({
      code: 'invalid_argument',
    });
    expect(() => new ParleySaver({ node, namespace: '-bad' })).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
    const threads = [];
    for await (const t of s.list({})) threads.push(t);
    expect(threads).toEqual([]);
  });
});
