/**
 * Queue tools and holders bound to the MCP session: two sessions (the SDK's client and
 * server over in-memory transports) against a real node behind a real HTTP server.
 * A subscribed queue is news when a task arrives or comes back; a task taken without a
 * holder belongs to the session's secret, which the other session cannot name.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createNode, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from './http.js';
import { createMcpServer } from './server.js';

let dir: string;
let node: ParleyNode;
let http: ParleyServer;
const sessions: Array<{ client: Client; updates: string[] }> = [];

type Body = Record<string, unknown>;
type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
async function call(i: number, name: string, args: Record<string, unknown>) {
  const r = (await sessions[i]?.client.callTool({ name, arguments: args })) as Result;
  return { isError: r.isError === true, body: JSON.parse(r.content[0]?.text ?? 'null') as Body };
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-mcp-queue-'));
  node = await createNode({ dataDir: dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
  http = await createServer({ node, port: 0, defaultMetrics: false });
  const endpoint = await http.listen();
  for (let i = 0; i < 2; i++) {
    const server = createMcpServer(new NodeClient({ endpoint }), { pollMs: 100 });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: `queue-test-${i}`, version: '0.0.0' });
    const updates: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params.uri);
    });
    await client.connect(clientSide);
    sessions.push({ client, updates });
  }
});

afterAll(async () => {
  for (const s of sessions) await s.client.close();
  await http?.close();
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('queue tools, a subscribed queue, session holders', () => {
  it('tells a subscriber of a new task; the taker is the session secret; the other session cannot complete it', async () => {
    const uri = 'parley://queue/w/jobs';
    await sessions[0]?.client.subscribeResource({ uri });
    const enq = await call(1, 'queue_enqueue', { namespace: 'w', queue: 'jobs', item: { n: 1 }, key: 'n1' });
    expect(enq.body).toEqual({ id: '0', created: true });
    await until(() => sessions[0]?.updates.includes(uri) === true);

    const { body } = await call(0, 'queue_take', { namespace: 'w', queue: 'jobs', ttl_seconds: 30 });
    const task = body.task as { id: string; fence: number; holder: string; item: unknown };
    expect(task.item).toEqual({ n: 1 });
    expect(task.holder).toMatch(/^mcp:[A-Za-z0-9_-]{24}$/);

    // Session 1 read the holder (queue_get) and tries it: refused before the node is called.
    const seen = await call(1, 'queue_get', { namespace: 'w', queue: 'jobs', id: task.id });
    expect(seen.body.holder).toBe(task.holder);
    const stolen = await call(1, 'queue_complete', {
      namespace: 'w',
      queue: 'jobs',
      id: task.id,
      holder: task.holder,
      fence: task.fence,
    });
    expect(stolen.isError).toBe(true);
    expect(stolen.body.error).toBe('invalid_argument');
    // Without a holder it acts as itself: not the taker.
    const asItself = await call(1, 'queue_complete', { namespace: 'w', queue: 'jobs', id: task.id, fence: task.fence });
    expect(asItself.body.error).toBe('lease_lost');

    const n = sessions[0]?.updates.length ?? 0;
    const hb = await call(0, 'queue_heartbeat', { namespace: 'w', queue: 'jobs', id: task.id, fence: task.fence });
    expect(hb.body.status).toBe('taken');
    const done = await call(0, 'queue_complete', {
      namespace: 'w',
      queue: 'jobs',
      id: task.id,
      fence: task.fence,
      result: 'ok',
    });
    expect(done.body).toMatchObject({ status: 'done', result: 'ok' });
    expect((await call(1, 'queue_stats', { namespace: 'w', queue: 'jobs' })).body).toMatchObject({ done: 1 });
    // A completion is not a new task: no news.
    const quietUntil = Date.now() + 400;
    while (Date.now() < quietUntil) await new Promise((r) => setTimeout(r, 50));
    expect(sessions[0]?.updates.length).toBe(n);
  });

  it('a lease acquired without a holder is the session secret; the other session can neither name nor renew it', async () => {
    const lease = await call(0, 'lease_acquire', { namespace: 'w', key: 'thread', ttl_seconds: 30 });
    const holder = lease.body.holder as string;
    expect(holder).toMatch(/^mcp:/);
    const epoch = lease.body.epoch;
    const named = await call(1, 'lease_renew', { namespace: 'w', key: 'thread', holder, epoch });
    expect(named.body.error).toBe('invalid_argument');
    expect((await call(1, 'lease_release', { namespace: 'w', key: 'thread', epoch })).body.error).toBe('lease_lost');
    expect((await call(0, 'lease_renew', { namespace: 'w', key: 'thread', epoch })).isError).toBe(false);
    // An explicit name of another form still works (a relay).
    const relay = await call(1, 'lock_acquire', { namespace: 'w', key: 'relay', owner: 'relay-7', ttl_seconds: 30 });
    expect(relay.body.owner).toBe('relay-7');
    const mine = await call(1, 'lock_acquire', { namespace: 'w', key: 'mine', ttl_seconds: 30 });
    expect(mine.body.owner).toMatch(/^mcp:/);
    expect(mine.body.owner).not.toBe(holder);
  });
});
