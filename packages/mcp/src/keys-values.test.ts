/**
 * Keys and values that a URL or a JSON parser could bend, through the MCP tools:
 * keys `.` and `..` (dot segments of a URL), values with `__proto__` and
 * `constructor` keys (ordinary keys, docs/guarantees.md). The SDK's client and server over an
 * in-memory transport, a real node behind a real HTTP server.
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

let dir: string;
let node: ParleyNode;
let http: ParleyServer;
let client: Client;

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
async function call(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: unknown }> {
  const r = (await client.callTool({ name, arguments: args })) as Result;
  return { isError: r.isError === true, body: JSON.parse(r.content[0]?.text ?? 'null') };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-mcp-keys-'));
  node = await createNode({ dataDir: dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
  http = await createServer({ node, port: 0, defaultMetrics: false });
  const server = createMcpServer(new NodeClient({ endpoint: await http.listen() }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  client = new Client({ name: 'keys-values-test', version: '0.0.0' });
  await client.connect(clientSide);
});

afterAll(async () => {
  await client?.close();
  await http?.close();
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('MCP tools with keys "." and ".."', () => {
  it('write, read, lock and delete them as keys', async () => {
    for (const [key, value] of [
      ['.', 'one'],
      ['..', 'two'],
    ] as const) {
      const set = await call('state_set', { namespace: 'dots', key, value });
      expect(set).toMatchObject({ isError: false, body: { namespace: 'dots', key, value } });
      expect(await call('state_get', { namespace: 'dots', key })).toMatchObject({ body: { key, value } });
      const lock = await call('lock_acquire', { namespace: 'dots', key, owner: 'o' });
      expect(lock).toMatchObject({ isError: false, body: { key, owner: 'o' } });
      const released = await call('lock_release', {
        namespace: 'dots',
        key,
        owner: 'o',
        fence: (lock.body as { fence: number }).fence,
      });
      expect(released.body).toMatchObject({ key, released: true });
      expect(await call('replicated_set', { namespace: 'dots', key, value })).toMatchObject({ body: { key, value } });
      expect(await call('replicated_get', { namespace: 'dots', key })).toMatchObject({ body: { key, value } });
    }
    expect((await node.strong('dots').get('.'))?.value).toBe('one');
    expect((await node.strong('dots').get('..'))?.value).toBe('two');
    expect(await call('state_delete', { namespace: 'dots', key: '..' })).toMatchObject({ isError: false });
    expect(await node.strong('dots').get('..')).toBeUndefined();
    expect((await node.strong('dots').get('.'))?.value).toBe('one');
  });
});

describe('MCP tools with values holding __proto__ and constructor keys', () => {
  const VALUE = '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"n":[{"__proto__":1}]}';
  const expected = () => JSON.parse(VALUE) as Record<string, unknown>;

  it('store them exactly (strong, replicated, lease state, lock metadata), and no prototype changes', async () => {
    const set = await call('state_set', { namespace: 'proto', key: 'k', value: expected() });
    expect(set.isError, JSON.stringify(set.body)).toBe(false);
    const got = await call('state_get', { namespace: 'proto', key: 'k' });
    expect((got.body as { value: unknown }).value).toEqual(expected());
    const stored = (await node.strong('proto').get('k'))?.value as Record<string, unknown>;
    expect(Object.hasOwn(stored, '__proto__')).toBe(true);
    expect(JSON.stringify(stored)).toBe(JSON.stringify(expected()));

    await call('replicated_set', { namespace: 'proto', key: 'k', value: expected() });
    expect(((await call('replicated_get', { namespace: 'proto', key: 'k' })).body as { value: unknown }).value).toEqual(
      expected(),
    );
    const lease = await call('lease_acquire', {
      namespace: 'proto',
      key: 'l',
      holder: 'h',
      ttl_seconds: 60,
      state: expected(),
    });
    expect((lease.body as { state: unknown }).state).toEqual(expected());
    const lock = await call('lock_acquire', { namespace: 'proto', key: 'm', owner: 'o', metadata: expected() });
    expect((lock.body as { metadata: unknown }).metadata).toEqual(expected());
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
