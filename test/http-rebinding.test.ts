/**
 * DNS rebinding against a token-less server: real HTTP requests (node:http and a
 * raw socket) carrying the Host and Origin a rebinding web page would send. Only
 * loopback names (and `allowedHosts`) get through; a foreign Origin is refused on
 * every method; nothing a refused request asks for is written; a token lifts both checks.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { createServer } from '@parley/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Started, startParley } from './http-harness.js';

let p: Started;
let port: number;
beforeAll(async () => {
  p = await startParley();
  port = Number(new URL(p.url).port);
});
afterAll(async () => {
  await p?.close();
});

interface Raw {
  status: number;
  body: { status?: number; error?: string; data?: unknown };
  contentType: string;
}

/** One request to 127.0.0.1:`to` with the given headers (Host included) as sent. */
function send(to: number, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port: to,
        method,
        path,
        headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Raw['body'] = {};
          try {
            parsed = JSON.parse(text) as Raw['body'];
          } catch {
            parsed = {};
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, contentType: String(res.headers['content-type']) });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const state = (ns: string, key?: string) => `/api/v1/distributed-state/${ns}${key === undefined ? '' : `/${key}`}`;
const local = () => ({ host: `127.0.0.1:${port}` });

async function expectAbsent(ns: string, key: string) {
  const res = await send(port, 'GET', state(ns, key), local());
  expect(res.status).toBe(404);
  expect(res.body.error).toBe('key_not_found');
}

describe('a token-less server answers only loopback names', () => {
  it('accepts localhost, 127.0.0.0/8 and [::1], any port and case', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LocalHost', `[::1]:${port}`, '127.0.0.2:80']) {
      const res = await send(port, 'GET', '/healthz', { host });
      expect(res.status, host).toBe(200);
    }
  });

  it('refuses a rebound name with 403 forbidden_host on every route, and writes nothing', async () => {
    const evil = { host: `rebind.attacker.example:${port}` };
    const cases: Array<[string, string, unknown?]> = [
      ['GET', state('rb', 'k')],
      ['POST', state('rb', 'k'), { value: 'owned' }],
      ['DELETE', `${state('rb')}?confirm=true`],
      ['GET', `${state('rb')}?watch=true`],
      ['POST', '/api/v1/replicated/rb/k', { value: 'owned' }],
      ['GET', '/metrics'],
      ['GET', '/openapi.json'],
      ['GET', '/no-such-route'],
    ];
    for (const [method, path, body] of cases) {
      const res = await send(port, method, path, evil, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body, `${method} ${path}`).toEqual({ status: 403, msg: expect.any(String), error: 'forbidden_host' });
    }
    await expectAbsent('rb', 'k');
    const replicated = await send(port, 'GET', '/api/v1/replicated/rb/k', local());
    expect(replicated.status).toBe(404);
  });

  it('refuses look-alike and malformed names', async () => {
    for (const host of [
      'localhost.attacker.example',
      '127.0.0.1.attacker.example',
      'attacker.example@127.0.0.1',
      'localhost.',
      '0.0.0.0',
      '10.0.0.1:80',
      '[::]:80',
      '',
    ]) {
      const res = await send(port, 'GET', '/healthz', { host });
      expect(res.status, host).toBe(403);
      expect(res.body.error, host).toBe('forbidden_host');
    }
  });

  it('refuses a request with no Host at all (HTTP/1.0)', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end('GET /healthz HTTP/1.0\r\n\r\n'));
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString('utf8');
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.[01] 403 /);
    expect(answer).toContain('"forbidden_host"');
  });
});

describe('a token-less server refuses foreign web origins', () => {
  it('refuses a non-loopback Origin with 403 forbidden_origin, on reads and writes, and writes nothing', async () => {
    for (const origin of ['http://attacker.example', 'https://attacker.example:4000', 'null', 'file://', 'not a url']) {
      const write = await send(port, 'POST', state('ro', 'k'), { ...local(), origin }, { value: 'owned' });
      expect(write.status, origin).toBe(403);
      expect(write.body.error, origin).toBe('forbidden_origin');
      const del = await send(port, 'DELETE', `${state('ro')}?confirm=true`, { ...local(), origin });
      expect(del.body.error, origin).toBe('forbidden_origin');
      const read = await send(port, 'GET', state('ro', 'k'), { ...local(), origin });
      expect(read.body.error, origin).toBe('forbidden_origin');
    }
    await expectAbsent('ro', 'k');
  });

  it('accepts a loopback Origin, and none', async () => {
    for (const origin of [`http://localhost:${port}`, 'http://127.0.0.1:3000', 'https://[::1]']) {
      const res = await send(port, 'POST', state('ro', 'ok'), { ...local(), origin }, { value: origin });
      expect(res.status, origin).toBeLessThan(300);
    }
    expect((await send(port, 'GET', state('ro', 'ok'), local())).status).toBe(200);
  });
});

describe('allowedHosts and tokens', () => {
  it('accepts the configured names (Host and Origin), still refuses others', async () => {
    const server = await createServer({ node: p.node, port: 0, defaultMetrics: false, allowedHosts: ['Parley.Test'] });
    const to = Number(new URL(await server.listen()).port);
    try {
      const ok = await send(to, 'GET', '/healthz', { host: `parley.test:${to}`, origin: 'http://parley.test' });
      expect(ok.status).toBe(200);
      const other = await send(to, 'GET', '/healthz', { host: 'other.test' });
      expect(other.body.error).toBe('forbidden_host');
      const foreign = await send(to, 'GET', '/healthz', { host: 'parley.test', origin: 'http://other.test' });
      expect(foreign.body.error).toBe('forbidden_origin');
    } finally {
      await server.close();
    }
  });

  it('refuses an allowed host with a port or a scheme', async () => {
    for (const name of ['parley.test:80', 'http://parley.test', 'a b', '']) {
      await expect(createServer({ node: p.node, port: 0, allowedHosts: [name] }), name).rejects.toMatchObject({
        code: 'invalid_argument',
      });
    }
  });

  it('with a token, any Host and Origin may call (the token is the check)', async () => {
    const server = await createServer({ node: p.node, port: 0, token: 's3cret', defaultMetrics: false });
    const to = Number(new URL(await server.listen()).port);
    try {
      const headers = { host: 'parley.example.com', origin: 'https://ui.example.com', authorization: 'Bearer s3cret' };
      expect((await send(to, 'GET', state('tk', 'k'), headers)).body.error).toBe('key_not_found');
      expect((await send(to, 'GET', state('tk', 'k'), { host: 'parley.example.com' })).body.error).toBe('unauthorized');
    } finally {
      await server.close();
    }
  });
});
