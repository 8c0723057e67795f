/**
 * ParleyStore: items by namespace and key, search over namespace prefixes with
 * filters (pushed to the store in Parley's grammar where it can say them),
 * listNamespaces, LangGraph's TTL settings, and replication between nodes.
 */
import type { ParleyNodeInternals } from '@parley/node/testing';
import { eventually, memoryCluster } from '@parley/node/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParleyStore } from './store.js';
import { memoryNode } from './testing.js';

let node: ParleyNodeInternals;
let n = 0;

beforeAll(async () => {
  node = await memoryNode();
});
afterAll(async () => {
  await node?.close();
});

function store(options: Partial<ConstructorParameters<typeof ParleyStore>[0]> = {}): ParleyStore {
  return new ParleyStore({ node, namespace: `store-${++n}`, ...options });
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('items', () => {
  it('put, get, update and delete', async () => {
    const s = store();
    expect(await s.get(['users', '1'], 'prefs')).toBeNull();
    await s.put(['users', '1'], 'prefs', { theme: 'dark' });
    const first = await s.get(['users', '1'], 'prefs');
    expect(first).toMatchObject({ namespace: ['users', '1'], key: 'prefs', value: { theme: 'dark' } });
    expect(first?.createdAt).toBeInstanceOf(Date);
    await new Promise((r) => setTimeout(r, 5));
    await s.put(['users', '1'], 'prefs', { theme: 'light' });
    const second = await s.get(['users', '1'], 'prefs');
    expect(second?.value).toEqual({ theme: 'light' });
    expect(second?.createdAt.getTime()).toBe(first?.createdAt.getTime());
    expect(second?.updatedAt.getTime()).toBeGreaterThan(first?.updatedAt.getTime() ?? Infinity);
    await s.delete(['users', '1'], 'prefs');
    expect(await s.get(['users', '1'], 'prefs')).toBeNull();
  });

  it('bad input is refused and writes nothing', async () => {
    const s = store();
    await expect(s.put([], 'k', { a: 1 })).rejects.toThrow();
    await expect(s.put(['a.b'], 'k', { a: 1 })).rejects.toThrow();
    expect(await rejection(s.put(['a'], '', { a: 1 }))).toMatchObject({ code: 'invalid_argument' });
    expect(await rejection(s.put(['a'], 'k', { a: 1 }, undefined, { ttl: -1 }))).toMatchObject({
      code: 'invalid_argument',
    });
    expect(await rejection(s.search(['a'], { filter: { x: { $near: 1 } } }))).toMatchObject({
      code: 'invalid_argument',
    });
    expect(await s.search([])).toEqual([]);
  });
});

describe('search', () => {
  let s: ParleyStore;
  beforeAll(async () => {
    s = store();
    await s.put(['users', '1', 'notes'], 'a', { kind: 'note', score: 5, tags: ['x'] });
    await s.put(['users', '1', 'notes'], 'b', { kind: 'note', score: 2 });
    await s.put(['users', '2', 'notes'], 'c', { kind: 'todo', score: 9, 'odd.field': 1 });
    await s.put(['users', '2'], 'd', { kind: 'note', score: '7' });
    await s.put(['docs'], 'e', { kind: 'doc' });
  });
  const keys = (items: Array<{ key: string }>) => items.map((i) => i.key).sort();

  it('over namespace prefixes', async () => {
    expect(keys(await s.search(['users']))).toEqual(['a', 'b', 'c', 'd']);
    expect(keys(await s.search(['users', '1']))).toEqual(['a', 'b']);
    expect(keys(await s.search(['users', '2', 'notes']))).toEqual(['c']);
    expect(keys(await s.search([]))).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(keys(await s.search(['user']))).toEqual([]);
  });

  it('with filters: equality, operators, fields the grammar cannot name', async () => {
    expect(keys(await s.search(['users'], { filter: { kind: 'note' } }))).toEqual(['a', 'b', 'd']);
    expect(keys(await s.search(['users'], { filter: { score: { $gt: 4 } } }))).toEqual(['a', 'c']);
    // Order comparisons hold between two numbers or two strings: '7' is not > 4.
    expect(keys(await s.search([], { filter: { score: { $gte: '5' } } }))).toEqual(['d']);
    expect(keys(await s.search([], { filter: { kind: { $in: ['todo', 'doc'] } } }))).toEqual(['c', 'e']);
    expect(keys(await s.search([], { filter: { kind: { $nin: ['note'] } } }))).toEqual(['c', 'e']);
    expect(keys(await s.search([], { filter: { score: { $exists: false } } }))).toEqual(['e']);
    expect(keys(await s.search([], { filter: { kind: { $ne: 'note' }, score: { $lt: 10 } } }))).toEqual(['c']);
    expect(keys(await s.search([], { filter: { tags: ['x'] } }))).toEqual(['a']);
    expect(keys(await s.search([], { filter: { 'odd.field': 1 } }))).toEqual(['c']);
  });

  it('limit and offset page through the matches in key order', async () => {
    const all = await s.search(['users'], { limit: 10 });
    const pages = [
      ...(await s.search(['users'], { limit: 2, offset: 0 })),
      ...(await s.search(['users'], { limit: 2, offset: 2 })),
    ];
    expect(pages.map((i) => i.key)).toEqual(all.map((i) => i.key));
    expect(await s.search(['users'], { limit: 0 })).toEqual([]);
  });

  it('listNamespaces with prefix, suffix, wildcards and depth', async () => {
    expect(await s.listNamespaces({})).toEqual([
      ['docs'],
      ['users', '1', 'notes'],
      ['users', '2'],
      ['users', '2', 'notes'],
    ]);
    expect(await s.listNamespaces({ prefix: ['users', '*', 'notes'] })).toEqual([
      ['users', '1', 'notes'],
      ['users', '2', 'notes'],
    ]);
    expect(await s.listNamespaces({ suffix: ['2'] })).toEqual([['users', '2']]);
    expect(await s.listNamespaces({ maxDepth: 1 })).toEqual([['docs'], ['users']]);
    expect(await s.listNamespaces({ limit: 1, offset: 1 })).toEqual([['users', '1', 'notes']]);
  });
});

describe('TTL', () => {
  const entryOf = (s: ParleyStore, ns: string[], key: string) =>
    node.eventual(s.namespace).get(JSON.stringify([ns, key]));

  it('defaultTtl and a put’s ttl (minutes) become the entry’s TTL; none is the longest', async () => {
    const s = store({ ttl: { defaultTtl: 2 } });
    await s.put(['a'], 'default', { v: 1 });
    await s.put(['a'], 'own', { v: 1 }, undefined, { ttl: 0.5 });
    await s.put(['a'], 'none', { v: 1 }, undefined, { ttl: null });
    expect((await entryOf(s, ['a'], 'default'))?.ttlSeconds).toBe(120);
    expect((await entryOf(s, ['a'], 'own'))?.ttlSeconds).toBe(30);
    expect((await entryOf(s, ['a'], 'none'))?.ttlSeconds).toBe(30 * 86_400);
    expect(await rejection(s.put(['a'], 'long', { v: 1 }, undefined, { ttl: 60 * 24 * 31 }))).toMatchObject({
      code: 'invalid_argument',
    });
  });

  it('a read refreshes the TTL once a tenth of it has passed, unless told not to', async () => {
    const s = store({ ttl: { defaultTtl: 0.05 } }); // 3 s
    const q = store({ namespace: s.namespace, ttl: { defaultTtl: 0.05, refreshOnRead: false } });
    await s.put(['a'], 'k', { v: 1 });
    const written = await entryOf(s, ['a'], 'k');
    await s.get(['a'], 'k'); // too early: no write
    expect((await entryOf(s, ['a'], 'k'))?.version).toBe(written?.version);
    const started = Date.now();
    while (Date.now() - started < 400) await new Promise((r) => setTimeout(r, 50));
    await q.get(['a'], 'k');
    await s.get(['a'], 'k', { refreshTtl: false });
    expect((await entryOf(s, ['a'], 'k'))?.version).toBe(written?.version);
    await s.search(['a']);
    const refreshed = await entryOf(s, ['a'], 'k');
    expect(refreshed?.expiresAt).toBeGreaterThan(written?.expiresAt ?? Infinity);
    expect((await s.get(['a'], 'k'))?.updatedAt.getTime()).toBe(
      (written?.value as { updatedAt: number } | undefined)?.updatedAt,
    );
  });
});

describe('replication', () => {
  it('an item written on one node, offline of the other, reaches it', async () => {
    const c = memoryCluster(7);
    const a = await c.start('a');
    const b = await c.start('b');
    const sa = new ParleyStore({ node: a, ttl: { refreshOnRead: false } });
    const sb = new ParleyStore({ node: b, ttl: { refreshOnRead: false } });
    c.network.partition(['a'], ['b']);
    await sa.put(['memories', 'u1'], 'fact', { text: 'likes tea' });
    expect(await sb.get(['memories', 'u1'], 'fact')).toBeNull();
    c.network.heal();
    for (let i = 0; i < 100 && !(await sb.get(['memories', 'u1'], 'fact')); i++) await c.time.advance(1_000);
    await eventually(async () => (await sb.get(['memories', 'u1'], 'fact')) !== null);
    expect((await sb.search(['memories']))[0]?.value).toEqual({ text: 'likes tea' });
    await Promise.all([a.close(), b.close()]);
  });
});
