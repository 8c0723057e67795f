/**
 * The `session` argument of the tools whose node call takes a session: it
 * travels as the `Parley-Session` header, and the result carries `session`,
 * the token the node answered. Against a stand-in HTTP server that records
 * the header and answers a new token, then a real node for a bad token.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createNode, type ParleyNode, Session } from '@parley/node';
import { createServer, type ParleyServer } from '@parley/server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NodeClient } from './http.js';
import { createMcpServer } from './server.js';

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };

async function connect(endpoint: string): Promise<Client> {
  const server = createMcpServer(new NodeClient({ endpoint }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'session-argument-test', version: '0.0.0' });
  await client.connect(clientSide);
  return client;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; body: Record<string, unknown> }> {
  const r = (await client.callTool({ name, arguments: args })) as Result;
  return { isError: r.isError === true, body: JSON.parse(r.content[0]?.text ?? 'null') };
}

describe('the session argument, through a stand-in node', () => {
  let http: Server;
  let client: Client;
  const got: Array<string | undefined> = [];
  let answer: { status: number; error?: string; token?: string; data?: unknown } = { status: 200 };

  beforeAll(async () => {
    http = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const session = req.headers['parley-session'];
        got.push(typeof session === 'string' ? session : undefined);
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (answer.token !== undefined && session !== undefined) headers['parley-session'] = answer.token;
        const body =
          answer.error === undefined
            ? { status: answer.status, msg: 'OK', data: answer.data ?? { namespace: 'n', key: 'k', value: 1 } }
            : { status: answer.status, msg: answer.error, error: answer.error };
        res.writeHead(answer.status, headers).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    client = await connect(`http://127.0.0.1:${(http.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    await client?.close();
    await new Promise<void>((r) => http.close(() => r()));
  });

  beforeEach(() => {
    got.length = 0;
    answer = { status: 200 };
  });

  const TOOLS: Array<[string, Record<string, unknown>]> = [
    ['state_get', { namespace: 'n', key: 'k', consistency: 'serializable' }],
    ['state_set', { namespace: 'n', key: 'k', value: 1 }],
    ['state_delete', { namespace: 'n', key: 'k' }],
    ['state_list', { namespace: 'n' }],
    ['claim', { namespace: 'n', key: 'k', value: 'me' }],
    ['replicated_set', { namespace: 'n', key: 'k', value: 1 }],
    ['replicated_get', { namespace: 'n', key: 'k' }],
    ['replicated_increment', { namespace: 'n', key: 'k', by: 2 }],
  ];

  it('sends it as Parley-Session and answers the token the node gave back as `session`', async () => {
    for (const [tool, args] of TOOLS) {
      got.length = 0;
      answer = { status: 200, token: `AQ${tool.length}` };
      const r = await call(client, tool, { ...args, session: 'AQIA' });
      expect(r.isError, `${tool}: ${JSON.stringify(r.body)}`).toBe(false);
      expect(got, tool).toEqual(['AQIA']);
      expect(r.body.session, tool).toBe(`AQ${tool.length}`);
      expect(r.body.value ?? r.body.namespace, tool).toBeDefined();
    }
  });

  it('without the argument: no header, no `session` in the result', async () => {
    const r = await call(client, 'replicated_get', { namespace: 'n', key: 'k' });
    expect(got).toEqual([undefined]);
    expect(r.body).not.toHaveProperty('session');
  });

  it('"" starts a session', async () => {
    answer = { status: 200, token: 'AQEA' };
    const r = await call(client, 'state_set', { namespace: 'n', key: 'k', value: 1, session: '' });
    expect(got).toEqual(['']);
    expect(r.body.session).toBe('AQEA');
  });

  it('a 404 read still carries the token; session_behind is retryable with a hint, and carries none', async () => {
    answer = { status: 404, error: 'key_not_found', token: 'AQ9' };
    const missing = await call(client, 'state_get', { namespace: 'n', key: 'k', session: 'AQ1' });
    expect(missing).toMatchObject({ isError: true, body: { error: 'key_not_found', session: 'AQ9' } });
    answer = { status: 503, error: 'session_behind' };
    const behind = await call(client, 'replicated_get', { namespace: 'n', key: 'k', session: 'AQ1' });
    expect(behind).toMatchObject({ isError: true, body: { error: 'session_behind', retryable: true } });
    expect(behind.body.hint).toMatch(/Retry in a moment with the same session/);
    expect(behind.body).not.toHaveProperty('session');
  });

  it('refuses a session that is not a token before calling the node', async () => {
    const r = await call(client, 'state_get', { namespace: 'n', key: 'k', session: 'not a token\n' });
    expect(r).toMatchObject({ isError: true, body: { error: 'invalid_argument' } });
    expect(got).toEqual([]);
  });
});

describe('the session argument, on a real node', () => {
  let dir: string;
  let node: ParleyNode;
  let http: ParleyServer;
  let client: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-mcp-session-'));
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

  it('a token that does not decode is invalid_argument and nothing is written', async () => {
    const r = await call(client, 'state_set', { namespace: 'n', key: 'bad', value: 1, session: 'AAAA' });
    expect(r).toMatchObject({ isError: true, body: { error: 'invalid_argument' } });
    expect(String(r.body.message)).toMatch(/session token/);
    expect(await node.strong('n').get('bad')).toBeUndefined();
  });

  it('a write and a read with a session answer a token that decodes', async () => {
    const set = await call(client, 'replicated_set', { namespace: 'n', key: 'k', value: 1, session: '' });
    expect(set).toMatchObject({ isError: false, body: { key: 'k', value: 1 } });
    // The node moved the new session to its write: one origin of namespace n.
    expect(Session.from(set.body.session as string).eventual('n')?.size).toBe(1);
    const get = await call(client, 'replicated_get', { namespace: 'n', key: 'k', session: set.body.session });
    expect(get).toMatchObject({ isError: false, body: { key: 'k', value: 1 } });
    expect(get.body.session).toBe(set.body.session);
    const st = await call(client, 'state_set', { namespace: 'n', key: 'k', value: 2, session: get.body.session });
    expect(Session.from(st.body.session as string).strong).toBeGreaterThan(0);
  });
});
