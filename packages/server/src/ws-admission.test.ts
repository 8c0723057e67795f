/** The WebSocket doors' admission rule on its own: each refusal, its answer and its count. */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { WsAdmission, type WsAdmissionRules, type WsLoad, type WsTarget } from './ws-admission.js';

const OPEN: WsLoad = { connections: 0, closing: false };

function request(url: string, headers: Record<string, string> = {}): IncomingMessage {
  return { url, headers: { host: '127.0.0.1:8080', ...headers } } as unknown as IncomingMessage;
}

/** Runs one upgrade request through the rule: what it returned, what the socket was answered, what was counted. */
function run(rules: Partial<WsAdmissionRules>, req: IncomingMessage, load: WsLoad = OPEN) {
  const counts: string[] = [];
  const admission = new WsAdmission({
    path: '/door',
    maxConnections: 2,
    kind: 'test',
    ...rules,
    count: (r) => counts.push(r),
  });
  let answer: string | undefined;
  const socket = { end: (text: string) => (answer = text) } as unknown as Duplex;
  let admitted: WsTarget | undefined;
  const ws = {} as WebSocket;
  const wss = {
    handleUpgrade: (
      req: IncomingMessage,
      _socket: Duplex,
      _head: Buffer,
      done: (ws: WebSocket, req: IncomingMessage) => void,
    ) => done(ws, req),
  };
  const taken = admission.upgrade(req, socket, Buffer.alloc(0), load, wss, (got, target) => {
    expect(got).toBe(ws);
    admitted = target;
  });
  const status = answer === undefined ? undefined : Number(answer.split(' ', 2)[1]);
  const error = answer === undefined ? undefined : JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error;
  return { taken, status, error, admitted, counts, admission };
}

describe('WebSocket admission before the upgrade', () => {
  it('leaves a path that is not under the door to the other doors', () => {
    for (const url of ['/other/x', '/door', '/doorx/y']) {
      const r = run({}, request(url));
      expect({ url, taken: r.taken, answer: r.status }).toEqual({ url, taken: false, answer: undefined });
    }
  });

  it('admits a request under the door, handing on the rest of the path and the query', () => {
    const r = run({}, request('/door/ns/a%20b?token=t&x=1', { origin: 'http://localhost:3000' }));
    expect(r.taken).toBe(true);
    expect(r.status).toBeUndefined();
    expect(r.admitted?.rest).toBe('ns/a%20b');
    expect(r.admitted?.query.get('x')).toBe('1');
    expect(r.counts).toEqual([]);
  });

  it('refuses a closing door with 503 closed', () => {
    const r = run({}, request('/door/x'), { connections: 0, closing: true });
    expect([r.taken, r.status, r.error, r.admitted]).toEqual([true, 503, 'closed', undefined]);
  });

  it('without a token, refuses a foreign Host or Origin with 403; an allowed host passes', () => {
    const host = run({}, request('/door/x', { host: 'evil.example' }));
    expect([host.status, host.error, host.admitted]).toEqual([403, 'forbidden_host', undefined]);
    const origin = run({}, request('/door/x', { origin: 'https://evil.example' }));
    expect([origin.status, origin.error, origin.admitted]).toEqual([403, 'forbidden_origin', undefined]);
    const allowed = run({ allowedHosts: ['parley.lan'] }, request('/door/x', { host: 'parley.lan:8080' }));
    expect(allowed.admitted?.rest).toBe('x');
  });

  it('with a token, leaves Host and Origin to the token', () => {
    const r = run({ token: 's' }, request('/door/x', { host: 'evil.example', origin: 'https://evil.example' }));
    expect(r.admitted?.rest).toBe('x');
  });

  it('refuses one connection over maxConnections with 503 unavailable, counted', () => {
    const r = run({}, request('/door/x'), { connections: 2, closing: false });
    expect([r.status, r.error, r.admitted, r.counts]).toEqual([
      503,
      'unavailable',
      undefined,
      ['too_many_connections'],
    ]);
    expect(run({}, request('/door/x'), { connections: 1, closing: false }).admitted).toBeDefined();
  });
});

describe('WebSocket admission after the upgrade: the bearer token', () => {
  const admission = (counts: string[], token?: string) =>
    new WsAdmission({ path: '/door', maxConnections: 1, kind: 'test', token, count: (r) => counts.push(r) });
  const none = new URLSearchParams();

  it('asks for none when the server has no token', () => {
    const counts: string[] = [];
    expect(admission(counts).tokenRefusal(request('/door/x'), none)).toBeUndefined();
    expect(counts).toEqual([]);
  });

  it('refuses a missing or wrong token, counted', () => {
    const counts: string[] = [];
    const a = admission(counts, 'secret');
    expect(a.tokenRefusal(request('/door/x'), none)).toMatch(/missing bearer token/);
    expect(a.tokenRefusal(request('/door/x', { authorization: 'Bearer nope' }), none)).toMatch(/invalid bearer token/);
    expect(a.tokenRefusal(request('/door/x'), new URLSearchParams('token=nope'))).toMatch(/invalid bearer token/);
    expect(counts).toEqual(['unauthorized', 'unauthorized', 'unauthorized']);
  });

  it('accepts the token as a header, a subprotocol or the query parameter', () => {
    const counts: string[] = [];
    const a = admission(counts, 'secret');
    const sub = `parley, parley.bearer.${Buffer.from('secret').toString('base64url')}`;
    expect(a.tokenRefusal(request('/door/x', { authorization: 'Bearer secret' }), none)).toBeUndefined();
    expect(a.tokenRefusal(request('/door/x', { 'sec-websocket-protocol': sub }), none)).toBeUndefined();
    expect(a.tokenRefusal(request('/door/x'), new URLSearchParams('token=secret'))).toBeUndefined();
    expect(counts).toEqual([]);
  });
});
