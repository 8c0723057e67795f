/**
 * The `Parley-Session` header on every namespace route that takes a session: the
 * token sent reaches the node call as a Session, the answer carries that
 * session's token after the call, a bad token is 400 invalid_argument with
 * nothing written, and `session_behind` is 503 with Retry-After. The node is a
 * real one behind a wrapper that records the `session` each call got.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionBehindError } from '@parley/interface';
import { createNode, type ParleyNode, Session } from '@parley/node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type ParleyServer } from './server.js';

let dir: string;
let real: ParleyNode;
let server: ParleyServer;
/** Each node call's method and the session it got (undefined: none). */
const seen: Array<{ method: string; session: Session | undefined }> = [];
let behind = false;

function wrapNamespace(ns: object, side: string): object {
  return new Proxy(ns, {
    get(target, prop) {
      const fn = Reflect.get(target, prop) as unknown;
      if (typeof fn !== 'function') return fn;
      return async (...args: unknown[]) => {
        const options = args.find((a) => typeof a === 'object' && a !== null && 'session' in (a as object)) as
          | { session?: Session }
          | undefined;
        const session = options?.session;
        seen.push({ method: `${side}.${String(prop)}`, session });
        if (session !== undefined && behind) throw new SessionBehindError('node is behind the session');
        return (fn as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-session-header-'));
  real = await createNode({ dataDir: dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
  const node = new Proxy(real, {
    get(target, prop) {
      if (prop === 'strong' || prop === 'eventual')
        return (ns: string) => wrapNamespace((target[prop] as (n: string) => object).call(target, ns), prop);
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  server = await createServer({ node, port: 0, defaultMetrics: false });
  START = Session.from();
  await real.strong('st').set('seed', 1, { session: START });
  await real.eventual('ev').set('seed', 1, { session: START });
  TOKEN = START.token;
});

afterAll(async () => {
  await server?.close();
  await real?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  seen.length = 0;
  behind = false;
});

/** A token of what the node has seen: a strong and an eventual write of a session. */
let TOKEN = '';
let START: Session;

interface Route {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  payload?: unknown;
  node: string;
}

/** Each route in an order where it succeeds (a get after its set, a delete last). */
const ROUTES: Route[] = [
  {
    name: 'replicated set',
    method: 'POST',
    url: '/api/v1/replicated/ev/k',
    payload: { value: 1 },
    node: 'eventual.set',
  },
  {
    name: 'replicated increment',
    method: 'POST',
    url: '/api/v1/replicated/ev/c/increment',
    payload: { by: 2 },
    node: 'eventual.increment',
  },
  { name: 'replicated get', method: 'GET', url: '/api/v1/replicated/ev/k', node: 'eventual.get' },
  { name: 'replicated delete', method: 'DELETE', url: '/api/v1/replicated/ev/k', node: 'eventual.delete' },
  {
    name: 'state set',
    method: 'POST',
    url: '/api/v1/distributed-state/st/k',
    payload: { value: 'v' },
    node: 'strong.set',
  },
  { name: 'state get', method: 'GET', url: '/api/v1/distributed-state/st/k', node: 'strong.get' },
  {
    name: 'state get serializable',
    method: 'GET',
    url: '/api/v1/distributed-state/st/k?consistency=serializable',
    node: 'strong.get',
  },
  { name: 'state list', method: 'GET', url: '/api/v1/distributed-state/st', node: 'strong.list' },
  { name: 'state delete', method: 'DELETE', url: '/api/v1/distributed-state/st/k', node: 'strong.delete' },
  { name: 'claim', method: 'POST', url: '/api/v1/claims/st/c', payload: { value: 'me' }, node: 'strong.claim' },
];

describe('Parley-Session on the namespace routes', () => {
  it('passes the token to the node call as a Session and answers its token after the call', async () => {
    for (const route of ROUTES) {
      seen.length = 0;
      const res = await server.app.inject({
        method: route.method,
        url: route.url,
        ...(route.payload === undefined ? {} : { payload: route.payload as object }),
        headers: { 'parley-session': TOKEN },
      });
      expect(res.statusCode, `${route.name}: ${res.body}`).toBeLessThan(300);
      const call = seen.find((s) => s.method === route.node);
      expect(call, route.name).toBeDefined();
      expect(call?.session, route.name).toBeInstanceOf(Session);
      // The session the node got is the one the token named, as the call left it.
      expect(res.headers['parley-session'], route.name).toBe(call?.session?.token);
      const back = Session.from(res.headers['parley-session'] as string);
      expect(back.strong, route.name).toBeGreaterThanOrEqual(START.strong);
      for (const [origin, seq] of START.eventual('ev') ?? [])
        expect(back.eventual('ev')?.get(origin), route.name).toBeGreaterThanOrEqual(seq);
      if (route.method !== 'GET' && route.node.startsWith('strong'))
        expect(back.strong, `${route.name} moves the session`).toBeGreaterThan(START.strong);
    }
  });

  it('an empty header starts a new session; no header is no session and no header back', async () => {
    const fresh = await server.app.inject({
      method: 'POST',
      url: '/api/v1/replicated/ev/n',
      payload: { value: 1 },
      headers: { 'parley-session': '' },
    });
    expect(fresh.statusCode).toBe(201);
    const back = fresh.headers['parley-session'] as string;
    expect(back).toBe(seen.at(-1)?.session?.token);
    // A node that honours sessions moves a new session to the write it made.
    expect(Session.from(back).eventual('ev')?.size).toBe(1);
    const none = await server.app.inject({ method: 'GET', url: '/api/v1/replicated/ev/n' });
    expect(none.statusCode).toBe(200);
    expect(seen.at(-1)?.session).toBeUndefined();
    expect(none.headers['parley-session']).toBeUndefined();
  });

  it('a read that finds nothing still answers the token (what it saw counts)', async () => {
    const res = await server.app.inject({
      method: 'GET',
      url: '/api/v1/distributed-state/st/absent',
      headers: { 'parley-session': TOKEN },
    });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: 'key_not_found' });
    expect(Session.from(res.headers['parley-session'] as string).strong).toBeGreaterThanOrEqual(START.strong);
  });

  it('a bad token is 400 invalid_argument and nothing is written', async () => {
    for (const bad of ['not base64!', 'AAAA', `${TOKEN}, ${TOKEN}`, 'x'.repeat(9000)]) {
      seen.length = 0;
      const res = await server.app.inject({
        method: 'POST',
        url: '/api/v1/distributed-state/st/bad',
        payload: { value: 1 },
        headers: { 'parley-session': bad },
      });
      expect(res.statusCode, bad.slice(0, 20)).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_argument' });
      expect(res.json().msg).toMatch(/session token/);
      expect(res.headers['parley-session']).toBeUndefined();
      expect(seen).toEqual([]);
    }
    expect(await real.strong('st').get('bad')).toBeUndefined();
  });

  it('session_behind is 503 with Retry-After, and no token back', async () => {
    behind = true;
    const res = await server.app.inject({
      method: 'GET',
      url: '/api/v1/replicated/ev/k',
      headers: { 'parley-session': TOKEN },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: 'session_behind' });
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['parley-session']).toBeUndefined();
  });
});
