/**
 * Leases and locks an agent watches: `lease_status` / `lock_inspect`, and
 * `notifications/resources/updated` for a subscribed lease or lock when it
 * expires, is released or changes holder (not when it is merely renewed). The
 * SDK's client and server over an in-memory transport, a real node behind a
 * real HTTP server.
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
let client: Client;
const updates: string[] = [];

type Body = Record<string, unknown> & { epoch?: number; fence?: number };
type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
async function call(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: Body }> {
  const r = (await client.callTool({ name, arguments: args })) as Result;
  return { isError: r.isError === true, body: JSON.parse(r.content[0]?.text ?? 'null') };
}

/** Resolves once `check()` holds; rejects after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms; updates: ${JSON.stringify(updates)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-mcp-watch-'));
  node = await createNode({ dataDir: dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
  http = await createServer({ node, port: 0, defaultMetrics: false });
  const server = createMcpServer(new NodeClient({ endpoint: await http.listen() }), { pollMs: 100 });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  client = new Client({ name: 'watch-test', version: '0.0.0' });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
  });
  await client.connect(clientSide);
});

afterAll(async () => {
  await client?.close();
  await http?.close();
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('lease_status and a subscribed lease', () => {
  it('tells the holder its lease expired, without polling, and not when it is renewed', async () => {
    expect((await call('lease_status', { namespace: 'w', key: 'task' })).body).toMatchObject({ status: 'absent' });
    const lease = await call('lease_acquire', { namespace: 'w', key: 'task', holder: 'agent-a', ttl_seconds: 2 });
    expect(lease.isError).toBe(false);
    const status = await call('lease_status', { namespace: 'w', key: 'task' });
    expect(status.body).toMatchObject({ status: 'held', holder: 'agent-a', epoch: lease.body.epoch });
    const uri = 'parley://lease/w/task';
    expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
    await client.subscribeResource({ uri });
    // Renewed: no news.
    await call('lease_renew', {
      namespace: 'w',
      key: 'task',
      holder: 'agent-a',
      epoch: lease.body.epoch,
      ttl_seconds: 2,
    });
    const quietUntil = Date.now() + 400;
    while (Date.now() < quietUntil) await new Promise((r) => setTimeout(r, 50));
    expect(updates).toEqual([]);
    // Expired: told within a poll.
    await until(() => updates.includes(uri));
    const read = (await client.readResource({ uri })).contents[0] as { text?: string } | undefined;
    expect(read?.text).toContain('"status":"expired"');
    // Taken by another holder: told again.
    const n = updates.length;
    await call('lease_acquire', { namespace: 'w', key: 'task', holder: 'agent-b', ttl_seconds: 30 });
    await until(() => updates.length > n);
    expect((await call('lease_status', { namespace: 'w', key: 'task' })).body).toMatchObject({
      status: 'held',
      holder: 'agent-b',
    });
    await client.unsubscribeResource({ uri });
  });
});

describe('lock_inspect and a subscribed lock', () => {
  it('tells a subscriber when the lock changes holder', async () => {
    const first = await call('lock_acquire', { namespace: 'w', key: 'leader', owner: 'agent-a', ttl_seconds: 1 });
    expect((await call('lock_inspect', { namespace: 'w', key: 'leader' })).body).toMatchObject({
      status: 'held',
      holder: { owner: 'agent-a', fence: first.body.fence },
    });
    const uri = 'parley://lock/w/leader';
    await client.subscribeResource({ uri });
    const second = await call('lock_acquire', {
      namespace: 'w',
      key: 'leader',
      owner: 'agent-b',
      ttl_seconds: 30,
      wait_seconds: 5,
    });
    expect(second.body.fence).toBeGreaterThan(first.body.fence ?? Infinity);
    await until(() => updates.includes(uri));
    expect((await call('lock_inspect', { namespace: 'w', key: 'leader' })).body).toMatchObject({
      status: 'held',
      holder: { owner: 'agent-b' },
    });
  });

  it('refuses to subscribe to anything else', async () => {
    await expect(client.subscribeResource({ uri: 'parley://strong/w' })).rejects.toThrow(/can be subscribed/);
  });
});
