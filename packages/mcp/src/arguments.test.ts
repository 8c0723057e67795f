/**
 * Tool arguments and failures an agent can act on: an unknown argument is
 * refused, a validation failure has the shape of every other error, an
 * unreachable node is retryable, and a lock can be kept alive (lock_renew)
 * and inspected. The SDK's client and server over an in-memory transport, a
 * real node behind a real HTTP server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createNode, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from './http.js';
import { createMcpServer } from './server.js';

let dir: string;
let node: ParleyNode;
let http: ParleyServer;
let client: Client;

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
async function callOn(c: Client, name: string, args: Record<string, unknown>) {
  const r = (await c.callTool({ name, arguments: args })) as Result;
  return { isError: r.isError === true, body: JSON.parse(r.content[0]?.text ?? 'null') };
}
const call = (name: string, args: Record<string, unknown>) => callOn(client, name, args);

async function connect(endpoint: string): Promise<Client> {
  const server = createMcpServer(new NodeClient({ endpoint, callTimeoutMs: 5_000 }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const c = new Client({ name: 'arguments-test', version: '0.0.0' });
  await c.connect(clientSide);
  return c;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-mcp-args-'));
  node = await createNode({ dataDir: dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
  http = await createServer({ node, port: 0, defaultMetrics: false });
  client = await connect(await http.listen());
});

afterAll(async () => {
  await client?.close();
  await http?.close();
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

const SHAPE = {
  error: expect.any(String),
  status: expect.any(Number),
  message: expect.any(String),
  retryable: expect.any(Boolean),
  hint: expect.any(String),
};

describe('arguments', () => {
  it('an unknown argument is refused as invalid_argument, naming it; nothing is written', async () => {
    const r = await call('state_set', { namespace: 'a1', key: 'k', value: 1, ttl: 60 });
    expect(r.isError).toBe(true);
    expect(r.body).toEqual({ ...SHAPE, error: 'invalid_argument', status: 400, retryable: false });
    expect(r.body.message).toContain('state_set');
    expect(r.body.message).toContain('unknown argument "ttl"');
    expect((await call('state_get', { namespace: 'a1', key: 'k' })).body.error).toBe('key_not_found');
  });

  it('strong reads take consistency, max_staleness_ms and max_lag_entries (the HTTP names); a bad mix is refused', async () => {
    await call('state_set', { namespace: 'a5', key: 'k', value: 'v' });
    for (const read of [
      {},
      { consistency: 'serializable' },
      { max_staleness_ms: 1_000 },
      { consistency: 'bounded', max_lag_entries: 0 },
    ]) {
      const got = await call('state_get', { namespace: 'a5', key: 'k', ...read });
      expect(got.body.value, JSON.stringify(read)).toBe('v');
      const page = await call('state_list', { namespace: 'a5', ...read });
      expect(page.body.items.map((e: { key: string }) => e.key)).toEqual(['k']);
    }
    const mix = await call('state_get', {
      namespace: 'a5',
      key: 'k',
      consistency: 'serializable',
      max_staleness_ms: 1,
    });
    expect(mix.body).toEqual({ ...SHAPE, error: 'invalid_argument', status: 400, retryable: false });
    const level = await call('state_get', { namespace: 'a5', key: 'k', consistency: 'eventual' });
    expect(level.body.error).toBe('invalid_argument');
  });

  it('a value out of bounds is the same shape, with the argument named', async () => {
    const r = await call('state_set', { namespace: 'a1', key: 'k', value: 1, ttl_seconds: 2_592_001 });
    expect(r.body).toEqual({ ...SHAPE, error: 'invalid_argument', status: 400, retryable: false });
    expect(r.body.message).toBe('state_set: ttl_seconds must be at most 2592000');
    const type = await call('state_get', { namespace: 'a1', key: 7 });
    expect(type.body.message).toBe('state_get: key must be a string (got number)');
    const missing = await call('lock_renew', { namespace: 'a1', key: 'k' });
    expect(missing.body.error).toBe('invalid_argument');
    expect(missing.body.message).toContain('fence');
  });

  it('every tool schema refuses extra properties (tools/list says so)', async () => {
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(15);
    for (const tool of tools) expect(tool.inputSchema.additionalProperties, tool.name).toBe(false);
  });
});

describe('locks an agent can keep', () => {
  it('lock_renew extends the grant; lock_inspect shows it; a renewal after release is lease_lost', async () => {
    const grant = await call('lock_acquire', { namespace: 'a2', key: 'job', owner: 'agent-1', ttl_seconds: 5 });
    expect(grant.isError, JSON.stringify(grant.body)).toBe(false);
    const renewed = await call('lock_renew', {
      namespace: 'a2',
      key: 'job',
      owner: 'agent-1',
      fence: grant.body.fence,
      ttl_seconds: 600,
    });
    expect(renewed.isError, JSON.stringify(renewed.body)).toBe(false);
    expect(renewed.body).toMatchObject({ owner: 'agent-1', fence: grant.body.fence, ttl_seconds: 600 });
    expect(Date.parse(renewed.body.expires_at)).toBeGreaterThan(Date.parse(grant.body.expires_at));
    const seen = await call('lock_inspect', { namespace: 'a2', key: 'job' });
    expect(seen.body).toMatchObject({ status: 'held', holder: { owner: 'agent-1', fence: grant.body.fence } });
    const other = await call('lock_renew', { namespace: 'a2', key: 'job', owner: 'agent-2', fence: grant.body.fence });
    expect(other.body.error).toBe('lock_held');
    await call('lock_release', { namespace: 'a2', key: 'job', owner: 'agent-1', fence: grant.body.fence });
    const late = await call('lock_renew', { namespace: 'a2', key: 'job', owner: 'agent-1', fence: grant.body.fence });
    expect(late.body).toMatchObject({ error: 'lease_lost', retryable: false });
  });
});

describe('an unreachable node', () => {
  it('is a retryable transport error with a hint to retry', async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, '127.0.0.1', () => {
        const a = probe.address() as { port: number };
        probe.close(() => resolve(a.port));
      });
    });
    const c = await connect(`http://127.0.0.1:${port}`);
    try {
      const r = await callOn(c, 'state_get', { namespace: 'a3', key: 'k' });
      expect(r.isError).toBe(true);
      expect(r.body).toEqual({ ...SHAPE, error: 'transport', status: 0, retryable: true });
      expect(r.body.message).toContain('ECONNREFUSED');
      expect(r.body.hint).toContain('retry');
    } finally {
      await c.close();
    }
  });
});
