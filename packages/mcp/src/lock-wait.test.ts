/**
 * lock_acquire with wait_seconds: the MCP server's call to the node is bounded by
 * its call timeout plus the wait, a cancelled tool call aborts the node call (and
 * the node hands the grant on), and progress notifications keep a client that
 * resets its timeout on progress waiting. The SDK's client and server over an
 * in-memory transport, a real node behind a real HTTP server. The call bound is
 * scaled down (1 s instead of 30 s) so the test takes seconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createNode, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from './http.js';
import { createMcpServer } from './server.js';

const CALL_TIMEOUT_MS = 1_000;
let dir: string;
let node: ParleyNode;
let http: ParleyServer;
let url: string;
const clients: Client[] = [];

async function connect(progressIntervalMs?: number): Promise<Client> {
  const server = createMcpServer(new NodeClient({ endpoint: url, callTimeoutMs: CALL_TIMEOUT_MS }), {
    progressIntervalMs,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'lock-wait-test', version: '0.0.0' });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
const body = (r: unknown) => JSON.parse((r as Result).content[0]?.text ?? 'null');
const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-mcp-wait-'));
  node = await createNode({ dataDir: dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
  http = await createServer({ node, port: 0, defaultMetrics: false });
  url = await http.listen();
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await http?.close();
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('lock_acquire with wait_seconds', () => {
  it('waits past the call timeout: the bound is the call timeout plus the wait', async () => {
    const client = await connect();
    const held = await node.locks('mw').acquire('k', { owner: 'a', ttl: 60 });
    const waiting = client.callTool({
      name: 'lock_acquire',
      arguments: { namespace: 'mw', key: 'k', owner: 'b', ttl_seconds: 60, wait_seconds: 10 },
    });
    await later(CALL_TIMEOUT_MS + 500); // past the call timeout alone
    await node.locks('mw').release('k', { owner: 'a', fence: held.fence });
    const r = (await waiting) as Result;
    expect(r.isError, r.content[0]?.text).not.toBe(true);
    expect(body(r)).toMatchObject({ owner: 'b' });
    expect(body(r).fence).toBeGreaterThan(held.fence);
  });

  it('a cancelled tool call aborts the node call, and the grant it would have had is handed on', async () => {
    const client = await connect();
    const held = await node.locks('mw').acquire('c', { owner: 'a', ttl: 60 });
    const cancel = new AbortController();
    const waiting = client
      .callTool(
        {
          name: 'lock_acquire',
          arguments: { namespace: 'mw', key: 'c', owner: 'b', ttl_seconds: 60, wait_seconds: 10 },
        },
        undefined,
        { signal: cancel.signal },
      )
      .catch((err: unknown) => err);
    await later(300);
    cancel.abort();
    expect(await waiting).toBeInstanceOf(Error);
    await node.locks('mw').release('c', { owner: 'a', fence: held.fence });
    // b's queued acquire was abandoned: the lock ends up free, not held by b for its 60 s TTL.
    const deadline = Date.now() + 15_000; // two commands and an HTTP round, on a loaded CI machine
    let info = await node.locks('mw').inspect('c');
    while ((info.holder !== null || info.waiters > 0) && Date.now() < deadline) {
      await later(50);
      info = await node.locks('mw').inspect('c');
    }
    expect(info.holder).toBeNull();
    expect(info.waiters).toBe(0);
  });

  it('sends progress while it waits, so a client that resets its timeout on progress keeps waiting', async () => {
    const client = await connect(200);
    const held = await node.locks('mw').acquire('p', { owner: 'a', ttl: 60 });
    const progress: number[] = [];
    const waiting = client.callTool(
      { name: 'lock_acquire', arguments: { namespace: 'mw', key: 'p', owner: 'b', ttl_seconds: 60, wait_seconds: 10 } },
      undefined,
      { timeout: 700, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.progress) },
    );
    await later(1_500); // more than twice the client's timeout
    await node.locks('mw').release('p', { owner: 'a', fence: held.fence });
    const r = (await waiting) as Result;
    expect(r.isError, r.content[0]?.text).not.toBe(true);
    expect(body(r)).toMatchObject({ owner: 'b' });
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
  });
});
