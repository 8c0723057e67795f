/**
 * The sync door with a real browser replica (@parley/browser, run in Node with
 * `ws` and a LevelDB database in place of IndexedDB): writes made while the
 * node is unreachable reach it and the cluster once it is back, the cluster's
 * writes reach the tab, the tab's state survives a restart, and the door's
 * admission and bounds refuse what they must.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserNode, createBrowserNode, type EventualChange, type WebSocketConstructor } from '@parley/browser';
import { decodeFrame, encodeHello, TAG_ERROR } from '@parley/browser/wire';
import { memoryCluster } from '@parley/node/testing';
import { ClassicLevel } from 'classic-level';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createServer, type ParleyServer } from '../server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

type Cluster = ReturnType<typeof memoryCluster>;

async function serve(node: Parameters<typeof createServer>[0]['node'], port = 0, token?: string) {
  const server: ParleyServer = await createServer({
    node,
    port,
    defaultMetrics: false,
    ...(token ? { token } : {}),
  });
  const url = await server.listen();
  return { server, url, port: Number(new URL(url).port) };
}

function tempDb(): { dir: string; open(): ClassicLevel<string, Uint8Array> } {
  const dir = mkdtempSync(join(tmpdir(), 'parley-tab-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, open: () => new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' }) };
}

async function tab(
  c: Cluster,
  url: string,
  db: ClassicLevel<string, Uint8Array>,
  token?: string,
  behindMs = 0,
): Promise<BrowserNode> {
  const node = await createBrowserNode({
    url,
    db,
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    now: () => c.time.nowMs() - behindMs,
    syncIntervalMs: 100,
    maxReconnectMs: 300,
    ...(token ? { token } : {}),
  });
  cleanups.push(() => node.close());
  return node;
}

/** Runs the cluster's manual clock until `check` holds (real-time bound: 10 s). */
async function until(c: Cluster, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await c.time.advance(5);
    await new Promise<void>((r) => setTimeout(r, 5));
  }
}

describe('the sync door and a browser replica', () => {
  it('offline writes reach the node and the cluster on reconnect; the cluster reaches the tab; state survives a restart', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    cleanups.push(async () => {
      await a.close();
      await b.close();
    });
    // The node's address, then nothing listening there: the tab starts offline.
    const first = await serve(a);
    await first.server.close();
    const store = tempDb();
    const t = await tab(c, first.url, store.open());
    const notes = t.eventual('notes');
    const seen: EventualChange[] = [];
    notes.watch({}, (ch) => seen.push(ch));
    await notes.set('draft', { text: 'written offline' }, { ttl: 600 });
    await notes.increment('visits', 2);
    await notes.set('gone', 1);
    expect(await notes.delete('gone')).toBe(true);
    expect(notes.syncState).not.toBe('synced');
    expect((await notes.get('draft'))?.value).toEqual({ text: 'written offline' });

    const back = await serve(a, first.port);
    cleanups.push(() => back.server.close());
    await until(c, () => notes.syncState === 'synced');
    expect((await a.eventual('notes').get('draft'))?.value).toEqual({ text: 'written offline' });
    expect((await a.eventual('notes').get('draft'))?.ttlSeconds).toBe(600);
    expect((await a.eventual('notes').get('visits'))?.value).toBe(2);
    expect(await a.eventual('notes').get('gone')).toBeUndefined();
    // Node a passes the tab's writes on to the cluster.
    await until(c, async () => (await b.eventual('notes').get('visits'))?.value === 2);

    // A write on b reaches the tab through a, and a counter converges across all three.
    await b.eventual('notes').set('fromB', 'hello');
    await b.eventual('notes').increment('visits', 3);
    await until(
      c,
      async () => (await notes.get('fromB'))?.value === 'hello' && (await notes.get('visits'))?.value === 5,
    );
    expect(seen.some((ch) => ch.key === 'fromB' && ch.type === 'set' && ch.origin === a.peerId)).toBe(true);
    expect(seen.some((ch) => ch.key === 'gone' && ch.type === 'delete' && ch.origin === 'local')).toBe(true);
    await notes.increment('visits', 1);
    await until(c, async () => (await b.eventual('notes').get('visits'))?.value === 6);
    expect(a.eventualModule.namespace('notes').replica.digest()).toEqual(notes.replica.digest());

    // A restart of the tab: everything is there before any node answers, under the same replica id.
    const id = notes.replicaId;
    await t.close();
    const again = await tab(c, 'http://127.0.0.1:1', store.open());
    const reopened = again.eventual('notes');
    expect((await reopened.get('draft'))?.value).toEqual({ text: 'written offline' });
    expect((await reopened.get('fromB'))?.value).toBe('hello');
    expect((await reopened.get('visits'))?.value).toBe(6);
    expect(reopened.replicaId).toBe(id);
    expect((await reopened.list({ prefix: 'v' })).items.map((e) => e.key)).toEqual(['visits']);
  }, 30_000);

  it("expiry as on the node: a TTL is the write's, the entry reads as absent at its instant everywhere, watch says expire", async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    cleanups.push(() => a.close());
    const { server, url } = await serve(a);
    cleanups.push(() => server.close());
    const ns = (await tab(c, url, tempDb().open())).eventual('flags');
    const expired: string[] = [];
    ns.watch({ prefix: 'f' }, (ch) => {
      if (ch.type === 'expire') expired.push(ch.key);
    });
    const written = await ns.set('flag', true, { ttl: 1 });
    expect(written.expiresAt).toBe(written.updatedAt + 1000);
    await until(c, async () => (await a.eventual('flags').get('flag'))?.expiresAt === written.expiresAt);
    await c.time.advance(written.expiresAt - c.time.nowMs());
    expect(await ns.get('flag')).toBeUndefined();
    expect(await a.eventual('flags').get('flag')).toBeUndefined();
    // The feed's timer is the browser's own (real time): it fires at most a second later.
    await until(c, () => expired.includes('flag'));
    // A counter renewed after expiry starts again, on both sides.
    await ns.increment('fcount', 4, { ttl: 1 });
    await c.time.advance(1000);
    expect((await ns.increment('fcount', 1)).value).toBe(1);
    await until(c, async () => (await a.eventual('flags').get('fcount'))?.value === 1);
  }, 30_000);

  it("a tab whose clock is minutes behind the node takes the node's clock, so it refuses none of its writes", async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    cleanups.push(() => a.close());
    const { server, url } = await serve(a);
    cleanups.push(() => server.close());
    const ns = (await tab(c, url, tempDb().open(), undefined, 5 * 60_000)).eventual('clock');
    await until(c, () => ns.syncState === 'synced');
    await a.eventual('clock').set('fromNode', 1);
    await until(c, async () => (await ns.get('fromNode'))?.value === 1);
    expect(ns.replica.stats().driftRejections).toBe(0);
    // Its own writes carry the node's time (less the WELCOME's transit), not five minutes ago,
    // and come after the node's write in the LWW order.
    const mine = await ns.set('fromNode', 2);
    expect(mine.updatedAt).toBeGreaterThan(c.time.nowMs() - 1_000);
    await until(c, async () => (await a.eventual('clock').get('fromNode'))?.value === 2);
  }, 30_000);

  it('strong calls go through the node (HTTP API): CAS with typed errors', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    cleanups.push(() => a.close());
    const { server, url } = await serve(a, 0, 'sesame');
    cleanups.push(() => server.close());
    const jobs = (await tab(c, url, tempDb().open(), 'sesame')).strong('jobs');
    expect(await jobs.get('cfg')).toBeUndefined();
    const first = await jobs.set('cfg', { pct: 25 });
    expect(first.operation).toBe('created');
    await jobs.set('cfg', { pct: 50 }, { ifVersion: first.version });
    await expect(jobs.set('cfg', { pct: 75 }, { ifVersion: first.version })).rejects.toMatchObject({
      code: 'version_mismatch',
    });
    expect((await a.strong('jobs').get('cfg'))?.value).toEqual({ pct: 50 });
    await expect(jobs.set('cfg', 1, { ifNotExists: true })).rejects.toMatchObject({ code: 'key_already_exists' });
    expect(await jobs.delete('cfg')).toBe(true);
    expect(await jobs.delete('cfg')).toBe(false);
    await expect(jobs.get('..')).rejects.toMatchObject({ code: 'invalid_argument' });
    const anonymous = (await tab(c, url, tempDb().open())).strong('jobs');
    await expect(anonymous.get('cfg')).rejects.toMatchObject({ code: 'unauthorized' });
  }, 30_000);

  it('a server with a token refuses a tab without it, and admits one with it', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    cleanups.push(() => a.close());
    const { server, url } = await serve(a, 0, 'sesame');
    cleanups.push(() => server.close());
    const denied = (await tab(c, url, tempDb().open())).eventual('notes');
    await expect(denied.synced()).rejects.toThrow(/refused/);
    expect(denied.syncError?.code).toBe('unauthorized');
    const admitted = (await tab(c, url, tempDb().open(), 'sesame')).eventual('notes');
    await admitted.set('k', 'v');
    await until(c, () => admitted.syncState === 'synced');
    expect((await a.eventual('notes').get('k'))?.value).toBe('v');
    const metrics = await (await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer sesame' } })).text();
    expect(metrics).toMatch(/parley_sync_refusals_total\{reason="unauthorized"\} [1-9]/);
    expect(metrics).toMatch(/parley_sync_connections [1-9]/);
  }, 30_000);

  it('refuses undecodable frames, a session without HELLO, a foreign namespace and oversized frames', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    cleanups.push(() => a.close());
    const { server, url } = await serve(a);
    cleanups.push(() => server.close());
    const ws = url.replace('http:', 'ws:');

    async function exchange(path: string, frames: Uint8Array[]): Promise<{ code: number; errors: string[] }> {
      const sock = new WebSocket(`${ws}${path}`);
      const errors: string[] = [];
      sock.on('message', (data: Buffer) => {
        const f = decodeFrame(new Uint8Array(data), 2 * 1_048_576);
        if (f.tag === TAG_ERROR) errors.push(f.code);
      });
      await new Promise<void>((r, j) => {
        sock.once('open', () => r());
        sock.once('error', j);
      });
      for (const f of frames) sock.send(f);
      const code = await new Promise<number>((r) => sock.once('close', (n: number) => r(n)));
      return { code, errors };
    }

    expect(await exchange('/sync/notes', [new Uint8Array([1, 0x77, 1, 2])])).toEqual({
      code: 4400,
      errors: ['decode_error'],
    });
    const digest = encodeHello('x', { namespace: 'notes', context: new Map() }).subarray(4);
    expect((await exchange('/sync/notes', [new Uint8Array([1, 0x03, ...digest])])).errors).toEqual([
      'invalid_argument',
    ]);
    const foreign = encodeHello('browser-x', { namespace: 'other', context: new Map() });
    expect(await exchange('/sync/notes', [foreign])).toEqual({ code: 4400, errors: ['invalid_argument'] });
    expect(await exchange('/sync/bad%20name', [])).toEqual({ code: 4400, errors: ['invalid_argument'] });
    expect((await exchange('/sync/notes', [new Uint8Array(2 * 1_048_576)])).code).toBe(1009);
  }, 30_000);
});
