/**
 * The door's admission rules: room names, the bearer token the ways a browser
 * can send it, the upgrade refusals, and the connection and room bounds.
 */

import type { ParleyNode } from '@parley/node';
import { memoryCluster } from '@parley/node/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer, type ServerOptions } from '../server.js';
import { type Client, rawClient, synced, until, yClient } from '../testing/yjs-clients.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function start(options: Partial<Omit<ServerOptions, 'node'>> = {}): Promise<{ node: ParleyNode; url: string }> {
  const c = memoryCluster();
  const node = await c.start('a');
  const server = await createServer({ node, port: 0, defaultMetrics: false, ...options });
  const http = await server.listen();
  cleanups.push(async () => {
    await server.close();
    await node.close();
  });
  return { node, url: `${http.replace('http:', 'ws:')}/yjs` };
}

function client(url: string, room: string, options?: Parameters<typeof yClient>[2]): Client {
  const c = yClient(url, room, options);
  cleanups.push(() => c.destroy());
  return c;
}

function raw(...args: Parameters<typeof rawClient>): ReturnType<typeof rawClient> {
  const c = rawClient(...args);
  cleanups.push(() => c.ws.terminate());
  return c;
}

describe('y-websocket rooms', () => {
  it('a room is {namespace}/{key}; without a "/" it is a key of namespace yjs; the key may hold "/" and escapes', async () => {
    const { node, url } = await start();
    const plain = client(url, 'plain');
    const nested = client(url, `docs/a/${encodeURIComponent('b c%')}`);
    await Promise.all([synced(plain), synced(nested)]);
    plain.doc.getText('t').insert(0, 'in yjs/plain');
    nested.doc.getText('t').insert(0, 'in docs, key a/b c%');
    const a = await node.eventual('yjs').yjs('plain');
    const b = await node.eventual('docs').yjs('a/b c%');
    await until('the node holds both', () => a.getText('t').toString() === 'in yjs/plain' && b.getText('t').length > 0);
    expect(b.getText('t').toString()).toBe('in docs, key a/b c%');
  });

  it('refuses a bad room name with 4400 (no reconnect) and a foreign path with 404 before the upgrade', async () => {
    const { url } = await start();
    for (const path of ['/bad%20ns/x', '/ns/', '/ns/%E0%A4%A', `/ns/${'k'.repeat(1025)}`, '/-ns/x']) {
      const c = raw(url + path);
      const closed = await c.closed;
      expect({ path, code: closed.code }).toEqual({ path, code: 4400 });
      expect(closed.reason).toMatch(/^bad room name/);
    }
    const base = url.slice(0, -'/yjs'.length);
    for (const path of ['/other', '/yjs', '/yjsx/ns/k']) {
      expect(await raw(base + path).refused).toBe(404);
    }
  });
});

describe('y-websocket Host and Origin', () => {
  it('a server without a token refuses a foreign Host or Origin with 403 before the upgrade, as its HTTP routes do', async () => {
    const { url } = await start({ allowedHosts: ['parley.test'] });
    const port = new URL(url).port;
    expect(await raw(`${url}/ns/k`, { headers: { origin: 'http://evil.example' } }).refused).toBe(403);
    expect(await raw(`${url}/ns/k`, { headers: { host: `evil.example:${port}` } }).refused).toBe(403);
    const fine: Array<Record<string, string>> = [
      { origin: `http://localhost:${port}` },
      { host: `parley.test:${port}` },
      {},
    ];
    for (const headers of fine) {
      const ok = raw(`${url}/ns/k`, { headers });
      await ok.opened;
    }
  });

  it('a server with a token takes any Host and Origin (the token is what a foreign page lacks)', async () => {
    const { url } = await start({ token: 't', host: '127.0.0.1' });
    const ok = raw(`${url}/ns/k?token=t`, { headers: { origin: 'http://app.example' } });
    await until('greeted', () => ok.received.length > 0);
  });
});

describe('y-websocket auth', () => {
  const token = 's3cret-token';

  it('takes the token as ?token=, as the parley.bearer.<base64url> subprotocol, or as an Authorization header', async () => {
    const { url } = await start({ token });
    const byParam = client(url, 'auth/doc', { params: { token } });
    const bySubprotocol = client(url, 'auth/doc', {
      protocols: ['parley', `parley.bearer.${Buffer.from(token).toString('base64url')}`],
    });
    await Promise.all([synced(byParam), synced(bySubprotocol)]);
    expect((bySubprotocol.provider.ws as unknown as { protocol: string }).protocol).toBe('parley');
    byParam.doc.getText('t').insert(0, 'x');
    await until('the other sees it', () => bySubprotocol.text() === 'x');
    const byHeader = raw(`${url}/auth/doc`, { headers: { authorization: `Bearer ${token}` } });
    await until('greeted', () => byHeader.received.length > 0);
    expect(byHeader.received[0]![0]).toBe(0); // sync step 1
  });

  it('answers a missing or wrong token with permission denied and 4401, and the provider stops', async () => {
    const { url } = await start({ token });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    cleanups.push(() => warn.mockRestore());
    for (const params of [{}, { token: 'wrong-guess' }] as Array<Record<string, string>>) {
      const c = client(url, 'auth/doc', { params });
      const closed = new Promise<{ code: number }>((resolve) => c.provider.on('closed', (e) => resolve(e)));
      expect((await closed).code).toBe(4401);
      expect(c.provider.shouldConnect).toBe(false);
      expect(c.provider.synced).toBe(false);
    }
    const denials = warn.mock.calls.map((args) => String(args[0]));
    expect(denials).toHaveLength(2);
    for (const d of denials) expect(d).toMatch(/^Permission denied to access .*\n.*bearer token/s);
    expect(denials[1]).toMatch(/invalid bearer token/);
    // The reason the server gives never echoes what was sent.
    expect(denials[1]!.split('\n')[1]).not.toContain('wrong-guess');
  });
});

describe('y-websocket bounds', () => {
  it('maxConnections: one more upgrade is 503; a freed slot is taken again', async () => {
    const { url } = await start({ yjs: { maxConnections: 2 } });
    const a = raw(`${url}/ns/k`);
    const b = raw(`${url}/ns/k`);
    await Promise.all([a.opened, b.opened]);
    expect(await raw(`${url}/ns/k`).refused).toBe(503);
    const metrics = await (await fetch(`${url.replace('ws:', 'http:').slice(0, -'/yjs'.length)}/metrics`)).text();
    expect(metrics).toContain('parley_yjs_connections 2');
    expect(metrics).toContain('parley_yjs_rooms 1');
    expect(metrics).toContain('parley_yjs_refusals_total{reason="too_many_connections"} 1');
    a.ws.close();
    await a.closed;
    const d = raw(`${url}/ns/k`);
    await d.opened;
  });

  it('maxRooms: a connection to one more room is closed with 1013 (retried later)', async () => {
    const { url } = await start({ yjs: { maxRooms: 1 } });
    const a = raw(`${url}/ns/one`);
    await a.opened;
    const b = raw(`${url}/ns/two`);
    expect((await b.closed).code).toBe(1013);
    const again = raw(`${url}/ns/one`);
    await until('greeted', () => again.received.length > 0);
  });
});
