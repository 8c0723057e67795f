/**
 * `parley mcp` as an agent host runs it: a child process speaking MCP over a real
 * stdio pipe, driven by the SDK's client. Against a running node (--endpoint, with a
 * token) and with an embedded node.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createNode, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PARLEY_BIN = fileURLToPath(new URL('../../cli/bin/parley.js', import.meta.url));
const TOKEN = 'mcp-test-token';
const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'parley-mcp-'));
  dirs.push(d);
  return d;
};

let node: ParleyNode;
let http: ParleyServer;
let client: Client;
let url: string;

async function connect(args: string[], env: Record<string, string>): Promise<Client> {
  const c = new Client({ name: 'parley-mcp-test', version: '0.0.0' });
  const baseEnv = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && e[0] !== 'PARLEY_ENDPOINT'),
  );
  await c.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [PARLEY_BIN, ...args],
      env: { ...baseEnv, ...env },
      stderr: 'pipe',
    }),
  );
  return c;
}

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
async function call(c: Client, name: string, args: Record<string, unknown>) {
  const r = (await c.callTool({ name, arguments: args })) as Result;
  const body = JSON.parse(r.content[0]?.text ?? 'null');
  return { isError: r.isError === true, body };
}

beforeAll(async () => {
  node = await createNode({ dataDir: temp(), logger: { debug() {}, info() {}, warn() {}, error() {} } });
  http = await createServer({ node, port: 0, token: TOKEN, defaultMetrics: false });
  url = await http.listen();
  client = await connect(['mcp', '--endpoint', url], { PARLEY_API_TOKEN: TOKEN });
});

afterAll(async () => {
  await client?.close();
  await http?.close();
  await node?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('parley mcp over stdio, against a running node', () => {
  it('lists every tool with a JSON schema', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        'claim',
        'lease_acquire',
        'lease_release',
        'lease_renew',
        'lease_status',
        'lease_write',
        'lock_acquire',
        'lock_inspect',
        'lock_release',
        'lock_renew',
        'queue_complete',
        'queue_enqueue',
        'queue_fail',
        'queue_get',
        'queue_heartbeat',
        'queue_list',
        'queue_stats',
        'queue_take',
        'replicated_get',
        'replicated_increment',
        'replicated_list',
        'replicated_set',
        'state_delete',
        'state_get',
        'state_list',
        'state_set',
      ].sort(),
    );
    const set = tools.find((t) => t.name === 'state_set');
    expect(set?.inputSchema.type).toBe('object');
    expect(set?.inputSchema.required).toEqual(expect.arrayContaining(['namespace', 'key']));
    expect(Object.keys(set?.inputSchema.properties ?? {})).toContain('if_version_matches');
  });

  it('reads, writes and compare-and-swaps; a stale version is a typed version_mismatch with a hint', async () => {
    const created = await call(client, 'state_set', { namespace: 'agents', key: 'plan', value: { step: 1 } });
    expect(created.isError).toBe(false);
    expect(created.body).toMatchObject({ key: 'plan', value: { step: 1 }, operation: 'created' });
    const v1 = created.body.version as string;
    const cas = await call(client, 'state_set', {
      namespace: 'agents',
      key: 'plan',
      value: { step: 2 },
      if_version_matches: v1,
    });
    expect(cas.body.operation).toBe('updated');
    const stale = await call(client, 'state_set', {
      namespace: 'agents',
      key: 'plan',
      value: { step: 3 },
      if_version_matches: v1,
    });
    expect(stale.isError).toBe(true);
    expect(stale.body).toMatchObject({ error: 'version_mismatch', status: 409, retryable: true });
    expect(stale.body.hint).toMatch(/re-read/i);
    expect((await call(client, 'state_get', { namespace: 'agents', key: 'plan' })).body.value).toEqual({ step: 2 });
    const missing = await call(client, 'state_get', { namespace: 'agents', key: 'nope' });
    expect(missing.body).toMatchObject({ error: 'key_not_found', status: 404 });
    const list = await call(client, 'state_list', { namespace: 'agents', q: 'plan' });
    expect(list.body.items.map((e: { key: string }) => e.key)).toEqual(['plan']);
  });

  it('claims have one winner; leases fence a stale epoch; locks refuse a second owner', async () => {
    expect((await call(client, 'claim', { namespace: 'agents', key: 'task-1', value: 'a' })).body.won).toBe(true);
    const lost = await call(client, 'claim', { namespace: 'agents', key: 'task-1', value: 'b' });
    expect(lost.body).toMatchObject({ won: false, value: 'a' });

    const lease = await call(client, 'lease_acquire', {
      namespace: 'agents',
      key: 'job',
      holder: 'a',
      ttl_seconds: 30,
    });
    expect(lease.isError).toBe(false);
    const epoch = lease.body.epoch as number;
    const held = await call(client, 'lease_acquire', { namespace: 'agents', key: 'job', holder: 'b', ttl_seconds: 30 });
    expect(held.body.error).toBe('lock_held');
    expect((await call(client, 'lease_renew', { namespace: 'agents', key: 'job', holder: 'a', epoch })).isError).toBe(
      false,
    );
    const wrote = await call(client, 'lease_write', { namespace: 'agents', key: 'job', holder: 'a', epoch, state: 1 });
    expect(wrote.body.state).toBe(1);
    expect((await call(client, 'lease_release', { namespace: 'agents', key: 'job', holder: 'a', epoch })).isError).toBe(
      false,
    );
    const next = await call(client, 'lease_acquire', { namespace: 'agents', key: 'job', holder: 'b', ttl_seconds: 30 });
    expect(next.body.epoch).toBeGreaterThan(epoch);
    const late = await call(client, 'lease_write', { namespace: 'agents', key: 'job', holder: 'a', epoch, state: 2 });
    expect(late.body).toMatchObject({ error: 'lease_lost', retryable: false });

    const lock = await call(client, 'lock_acquire', {
      namespace: 'agents',
      key: 'deploy',
      owner: 'a',
      ttl_seconds: 30,
    });
    expect(lock.body.fence).toEqual(expect.any(Number));
    const busy = await call(client, 'lock_acquire', { namespace: 'agents', key: 'deploy', owner: 'b' });
    expect(busy.body.error).toBe('lock_held');
    const rel = await call(client, 'lock_release', {
      namespace: 'agents',
      key: 'deploy',
      owner: 'a',
      fence: lock.body.fence,
    });
    expect(rel.body.released).toBe(true);
  });

  it('replicated set, get, increment; bad input is refused before the node is called', async () => {
    await call(client, 'replicated_set', { namespace: 'notes', key: 'mood', value: 'ok' });
    expect((await call(client, 'replicated_get', { namespace: 'notes', key: 'mood' })).body.value).toBe('ok');
    await call(client, 'replicated_increment', { namespace: 'notes', key: 'seen', by: 2 });
    expect((await call(client, 'replicated_increment', { namespace: 'notes', key: 'seen' })).body.value).toBe(3);
    const bad = (await client.callTool({
      name: 'state_set',
      arguments: { namespace: '../x', key: 'k', value: 1 },
    })) as Result;
    expect(bad.isError).toBe(true);
    expect(await node.strong('x').get('k')).toBeUndefined();
  });

  it('lists namespaces as resources and reads one', async () => {
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toContain('parley://strong/agents');
    expect(uris).toContain('parley://replicated/notes');
    const read = await client.readResource({ uri: 'parley://strong/agents' });
    const page = JSON.parse((read.contents[0] as { text: string }).text);
    expect(page.items.map((e: { key: string }) => e.key)).toContain('plan');
  });
});

describe('parley mcp when the host closes stdin', () => {
  it('answers the calls it already read before it exits', async () => {
    const child = spawn(process.execPath, [PARLEY_BIN, 'mcp', '--endpoint', url], {
      env: { ...process.env, PARLEY_API_TOKEN: TOKEN },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const lines = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sh', version: '0' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'state_set', arguments: { namespace: 'piped', key: 'k', value: 7 } },
      },
    ];
    child.stdin.end(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    // Generous: a loaded machine takes seconds to start the CLI and its node client.
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    await exited;
    clearTimeout(timer);
    const answers = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id?: number; result?: Result });
    const call = answers.find((a) => a.id === 2);
    expect(call?.result?.isError).not.toBe(true);
    expect(JSON.parse(call?.result?.content[0]?.text ?? '{}')).toMatchObject({ key: 'k', value: 7 });
    expect((await node.strong('piped').get('k'))?.value).toBe(7);
  }, 90_000);
});

describe('parley mcp with an embedded node', () => {
  it('serves the tools from a node it starts, and stops it when stdin closes', async () => {
    const c = await connect(['mcp', '--data-dir', temp()], {});
    try {
      await call(c, 'state_set', { namespace: 'solo', key: 'k', value: 42 });
      expect((await call(c, 'state_get', { namespace: 'solo', key: 'k' })).body.value).toBe(42);
    } finally {
      await c.close();
    }
  });
});
