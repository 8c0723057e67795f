/**
 * The HTTP door of a node whose own disk fills up (a real tmpfs, mounted as
 * root): writes answer 507 `storage_full` (eventual and strong, the strong
 * one at once, not after its timeout), a strong watch stream open on it ends
 * with `event: error` naming the fault and a new one is refused with 507,
 * `/readyz` turns 503 naming the fault,
 * `/metrics` and `/api/v1/status` show it. And readiness is O(1): it never
 * walks the node's data.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createNode, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { canMountTmpfs, mountTmpfs, type Tmpfs } from '@parley/storage/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { api, startParley } from './http-harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('/readyz', () => {
  it('answers without walking the data: node.status() is never called', async () => {
    const p = await startParley();
    cleanups.push(() => p.close());
    await api(p.url, 'POST', '/api/v1/distributed-state/big/k', { body: { value: 'x'.repeat(1000) } });
    (p.node as { status: ParleyNode['status'] }).status = () => {
      throw new Error('readiness must not read every namespace');
    };
    const r = await api(p.url, 'GET', '/readyz');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ data: { status: 'ready' } });
  });
});

describe.skipIf(!canMountTmpfs)('a node whose disk is full, over HTTP', () => {
  it('writes answer storage_full, the strong one at once; /readyz, /metrics and status name the fault', async () => {
    const fs = mountTmpfs(4 * 1024 * 1024) as Tmpfs;
    cleanups.push(() => fs.unmount());
    writeFileSync(join(fs.path, 'filler'), new Uint8Array(1024 * 1024));
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const node = await createNode({ dataDir: join(fs.path, 'node'), listen: ['/ip4/127.0.0.1/tcp/0'], logger: quiet });
    let server: ParleyServer | undefined;
    cleanups.push(async () => {
      await server?.close();
      await node.close().catch(() => {});
    });
    server = await createServer({ node, port: 0, defaultMetrics: false });
    const url = await server.listen();
    expect((await api(url, 'GET', '/readyz')).status).toBe(200);
    const watch = await fetch(`${url}/api/v1/distributed-state/s?watch=true`);
    expect(watch.status).toBe(200);
    const streamText = new Response(watch.body).text(); // the whole stream, once it ends
    await api(url, 'POST', '/api/v1/distributed-state/s/before', { body: { value: 1 } });
    const value = 'x'.repeat(64 * 1024);
    let last: { status: number; body: unknown } | undefined;
    for (let i = 0; i < 200; i++) {
      last = await api(url, 'POST', `/api/v1/replicated/fill/k${i}`, { body: { value } });
      if (last.status !== 201) break;
    }
    expect(last).toMatchObject({ status: 507, body: { error: 'storage_full' } });
    const ready = await api(url, 'GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(JSON.stringify(ready.body)).toContain('storage_full');
    // The Raft log shares the disk: its next save fails, and the call says so at once.
    const started = Date.now();
    const strong = await api(url, 'POST', '/api/v1/distributed-state/s/during', { body: { value: value.repeat(8) } });
    expect(strong).toMatchObject({ status: 507, body: { error: 'storage_full' } });
    expect(Date.now() - started).toBeLessThan(5_000); // the call timeout is 30 s
    // The watch saw what was applied, then ended naming the fault; a new one is refused.
    const events = await streamText;
    expect(events).toContain('"key":"before"');
    expect(events).toMatch(/event: error\ndata: \{"error":"storage_full"/);
    const refused = await api(url, 'GET', '/api/v1/distributed-state/s?watch=true');
    expect(refused).toMatchObject({ status: 507, body: { error: 'storage_full' } });
    const read = await api(url, 'GET', '/api/v1/distributed-state/s/before');
    expect(read).toMatchObject({ status: 507, body: { error: 'storage_full' } });
    expect((await api(url, 'GET', '/api/v1/replicated/fill/k0')).status).toBe(200); // eventual reads still work
    const metrics = (await api(url, 'GET', '/metrics')).text;
    expect(metrics).toMatch(/parley_storage_faulted\{store="kv"\} 1/);
    expect(metrics).toMatch(/parley_storage_faulted\{store="raft"\} 1/);
    expect(metrics).toMatch(/parley_storage_faults_total\{store="kv",code="storage_full"\} 1/);
    expect(metrics).toMatch(/parley_storage_faults_total\{store="raft",code="storage_full"\} 1/);
    const status = (await api(url, 'GET', '/api/v1/status')).body as { data: { node: { faults: unknown[] } } };
    expect(status.data.node.faults).toEqual([
      expect.objectContaining({ store: 'kv', code: 'storage_full' }),
      expect.objectContaining({ store: 'raft', code: 'storage_full' }),
    ]);
    expect(node.health().faults.map((f) => f.store)).toEqual(['kv', 'raft']);
  });
});
