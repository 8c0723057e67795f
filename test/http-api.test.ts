/**
 * The HTTP surface beyond seed 000's examples: request validation (typed 4xx,
 * nothing written), keys holding "/", auth and bind refusal, body limit,
 * /healthz, /readyz, /metrics, /openapi.json (validated against the OpenAPI
 * 3.0 schema), server-sent-event watches, claims, leases and replicated entries.
 */

import { createServer } from '@parley/server';
import { pathSegment } from '@parley/server/client';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ISO_MICROS, type Started, startParley } from './http-harness.js';

let p: Started;
beforeAll(async () => {
  p = await startParley();
});
afterAll(async () => {
  await p?.close();
});

const state = (ns: string, key?: string) =>
  `/api/v1/distributed-state/${pathSegment(ns)}${key === undefined ? '' : `/${pathSegment(key)}`}`;

async function expectAbsent(ns: string, key: string) {
  const res = await api(p.url, 'GET', state(ns, key));
  expect(res.status).toBe(404);
  expect(res.body.error).toBe('key_not_found');
}

describe('validation: typed 4xx, nothing written', () => {
  const bad: Array<[string, string, string, unknown, number, string]> = [
    ['unknown field', 'POST', state('v', 'k'), { value: 1, colour: 'red' }, 400, 'invalid_argument'],
    ['missing value', 'POST', state('v', 'k'), { ttl_seconds: 5 }, 400, 'invalid_argument'],
    ['ttl as a string', 'POST', state('v', 'k'), { value: 1, ttl_seconds: '5' }, 400, 'invalid_argument'],
    ['ttl zero', 'POST', state('v', 'k'), { value: 1, ttl_seconds: 0 }, 400, 'invalid_argument'],
    ['ttl past 30 days', 'POST', state('v', 'k'), { value: 1, ttl_seconds: 2_592_001 }, 400, 'invalid_argument'],
    ['ttl fractional', 'POST', state('v', 'k'), { value: 1, ttl_seconds: 1.5 }, 400, 'invalid_argument'],
    ['if_not_exists as a string', 'POST', state('v', 'k'), { value: 1, if_not_exists: 'yes' }, 400, 'invalid_argument'],
    [
      'both conditions',
      'POST',
      state('v', 'k'),
      { value: 1, if_not_exists: true, if_version_matches: 'x' },
      400,
      'invalid_argument',
    ],
    ['a body that is not an object', 'POST', state('v', 'k'), [1, 2], 400, 'invalid_argument'],
    ['bad namespace', 'POST', state('-bad ns', 'k'), { value: 1 }, 400, 'invalid_argument'],
    ['huge key', 'POST', state('v', 'k'.repeat(1025)), { value: 1 }, 400, 'invalid_argument'],
    ['control character in key', 'POST', state('v', 'a\u0001b'), { value: 1 }, 400, 'invalid_argument'],
    ['fence zero', 'POST', state('v', 'k'), { value: 1, fence: 0 }, 400, 'invalid_argument'],
  ];
  for (const [name, method, path, body, status, code] of bad) {
    it(name, async () => {
      const res = await api(p.url, method, path, { body });
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ status, msg: expect.any(String), error: code });
      await expectAbsent('v', 'k');
    });
  }

  it('malformed JSON, a wrong content type and an unknown top-level __proto__ field are 4xx', async () => {
    for (const [body, type] of [
      ['{"value": ', 'application/json'],
      ['{"value": 1, "__proto__": {"x": 1}}', 'application/json'],
      ['{"value": 1, "constructor": {"prototype": {"x": 1}}}', 'application/json'],
      ['value=1', 'application/x-www-form-urlencoded'],
      ['', 'application/json'],
    ] as const) {
      const res = await api(p.url, 'POST', state('v', 'k'), { body, headers: { 'content-type': type } });
      expect(res.status, body).toBeGreaterThanOrEqual(400);
      expect(res.status, body).toBeLessThan(500);
      expect(typeof res.body.error).toBe('string');
    }
    await expectAbsent('v', 'k');
  });

  it('a body past the limit is 413 value_too_large; a value of 1 MiB + 1 is refused by the node', async () => {
    const huge = await api(p.url, 'POST', state('v', 'k'), { body: { value: 'x'.repeat(1_200_000) } });
    expect(huge.status).toBe(413);
    expect(huge.body.error).toBe('value_too_large');
    const justOver = await api(p.url, 'POST', state('v', 'k'), { body: { value: 'x'.repeat(1_048_576) } });
    expect(justOver.status).toBe(413);
    expect(justOver.body.error).toBe('value_too_large');
    await expectAbsent('v', 'k');
  });

  it('bad list queries: limit, sort, cursor, filter, unknown parameter', async () => {
    await api(p.url, 'POST', state('v', 'seen'), { body: { value: { status: 'open' } } });
    for (const query of [
      'limit=0',
      'limit=1001',
      'limit=ten',
      'sort_by=value',
      'sort_order=up',
      'cursor=not-a-cursor',
      'filter=value.status%20%3D%3D',
      'filter=((((',
      'colour=red',
      'from_revision=1',
      'limit=1&limit=2',
    ]) {
      const res = await api(p.url, 'GET', `${state('v')}?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toBe('invalid_argument');
    }
    const ok = await api(p.url, 'GET', `${state('v')}?filter=${encodeURIComponent('status = "open"')}&limit=5`);
    expect(ok.status).toBe(200);
    expect((ok.body.data as { items: unknown[] }).items).toHaveLength(1);
    const byPrefix = await api(p.url, 'GET', `${state('v')}?prefix=se`);
    expect((byPrefix.body.data as { items: unknown[] }).items).toHaveLength(1);
    const otherPrefix = await api(p.url, 'GET', `${state('v')}?prefix=een`);
    expect((otherPrefix.body.data as { items: unknown[] }).items).toHaveLength(0);
  });

  it('an unknown route is 404 not_found, a known path under a wrong method 405, in the envelope', async () => {
    const res = await api(p.url, 'PUT', state('v', 'k'), { body: { value: 1 } });
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ status: 405, msg: expect.any(String), error: 'method_not_allowed' });
    expect((await api(p.url, 'GET', '/nope')).body.error).toBe('not_found');
  });
});

describe('strong read consistency (query parameters)', () => {
  it('consistency=serializable and bounded reads answer from the node; a bad mix is 400 invalid_argument', async () => {
    await api(p.url, 'POST', state('rc', 'k'), { body: { value: 'v' } });
    for (const q of [
      '',
      '?consistency=linearizable',
      '?consistency=serializable',
      '?max_staleness_ms=1000',
      '?consistency=bounded&max_lag_entries=0',
      '?max_staleness_ms=0&max_lag_entries=5',
    ]) {
      const got = await api(p.url, 'GET', `${state('rc', 'k')}${q}`);
      expect(got.status, q).toBe(200);
      expect((got.body.data as { value: unknown }).value, q).toBe('v');
      const page = await api(p.url, 'GET', `${state('rc')}${q}`);
      expect(page.status, q).toBe(200);
      expect(
        (page.body.data as { items: { key: string }[] }).items.map((e) => e.key),
        q,
      ).toEqual(['k']);
    }
    for (const q of [
      '?consistency=eventual',
      '?consistency=serializable&max_staleness_ms=10',
      '?consistency=bounded',
      '?max_staleness_ms=-1',
      '?max_lag_entries=x',
      '?watch=true&consistency=serializable',
    ]) {
      const res = await api(p.url, 'GET', `${state('rc', q.startsWith('?watch') ? undefined : 'k')}${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error, q).toBe('invalid_argument');
    }
  });
});

describe('keys', () => {
  it('a key holding "/" and ":" round-trips when its slash is encoded', async () => {
    const key = 'dispatch/daily-etl:2026-08-09';
    const set = await api(p.url, 'POST', state('k', key), { body: { value: 1 } });
    expect(set.status).toBe(201);
    expect((set.body.data as { key: string }).key).toBe(key);
    const got = await api(p.url, 'GET', state('k', key));
    expect((got.body.data as { key: string }).key).toBe(key);
  });

  it('keys "." and ".." are keys, sent as %2E and %2E%2E with the path as written', async () => {
    expect(pathSegment('.')).toBe('%2E');
    expect(pathSegment('..')).toBe('%2E%2E');
    expect(pathSegment('...')).toBe('...');
    expect(pathSegment('a.b')).toBe('a.b');
    // What fetch would have sent: the dot segments are gone, encoded or not.
    expect(new URL(`${p.url}${state('dots', '..')}/x`).pathname).toBe('/api/v1/distributed-state/x');
    for (const [key, value] of [
      ['.', 'one'],
      ['..', 'two'],
    ] as const) {
      const set = await api(p.url, 'POST', state('dots', key), { body: { value } });
      expect(set.status, set.text).toBe(201);
      expect(set.body.data).toMatchObject({ namespace: 'dots', key, value });
      const lock = await api(p.url, 'POST', `/api/v1/locks/dots/${pathSegment(key)}`, { body: { owner: 'o' } });
      expect(lock.body.data).toMatchObject({ key, owner: 'o' });
      const fence = (lock.body.data as { fence: number }).fence;
      const renew = await api(p.url, 'POST', `/api/v1/locks/dots/${pathSegment(key)}/renew`, {
        body: { owner: 'o', fence },
      });
      expect(renew.body.data).toMatchObject({ key, fence });
    }
    expect((await api(p.url, 'GET', state('dots', '.'))).body.data).toMatchObject({ key: '.', value: 'one' });
    expect((await api(p.url, 'GET', state('dots', '..'))).body.data).toMatchObject({ key: '..', value: 'two' });
    const list = await api(p.url, 'GET', `${state('dots')}?sort_by=key`);
    expect((list.body.data as { items: { key: string }[] }).items.map((e) => e.key)).toEqual(['.', '..']);
    expect((await api(p.url, 'DELETE', state('dots', '..'))).body.data).toMatchObject({ key: '..', deleted: true });
    await expectAbsent('dots', '..');
    expect((await api(p.url, 'GET', state('dots', '.'))).status).toBe(200);
  });
});

describe('values holding __proto__ and constructor keys', () => {
  // As raw text: a JS object literal with `__proto__:` would set a prototype instead of a key.
  const VALUE = '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"n":[{"__proto__":1}]}';
  const expected = () => JSON.parse(VALUE) as Record<string, unknown>;
  const send = (method: string, path: string, body: string) =>
    api(p.url, method, path, { body, headers: { 'content-type': 'application/json' } });
  const unpolluted = () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('polluted');
  };
  /** The value as the server answered it, read as raw JSON text (own keys, never a prototype). */
  const answered = (text: string, field = 'value') =>
    (JSON.parse(text) as { data: Record<string, unknown> }).data[field] as Record<string, unknown>;

  it('are stored and answered exactly, in both tiers and in lease state and lock metadata', async () => {
    const created = await send('POST', state('proto', 'k'), `{"value":${VALUE}}`);
    expect(created.status, created.text).toBe(201);
    expect(answered(created.text)).toEqual(expected());
    expect(Object.hasOwn(answered(created.text), '__proto__')).toBe(true);
    const got = await api(p.url, 'GET', state('proto', 'k'));
    expect(answered(got.text)).toEqual(expected());
    expect(JSON.stringify(answered(got.text))).toBe(JSON.stringify(expected()));

    const replicated = await send('POST', '/api/v1/replicated/proto/k', `{"value":${VALUE}}`);
    expect(replicated.status, replicated.text).toBeLessThan(300);
    expect(answered((await api(p.url, 'GET', '/api/v1/replicated/proto/k')).text)).toEqual(expected());

    const claim = await send('POST', '/api/v1/claims/proto/c', `{"value":${VALUE}}`);
    expect(answered(claim.text)).toEqual(expected());
    const lease = await send('POST', '/api/v1/leases/proto/l', `{"holder":"h","ttl_seconds":60,"state":${VALUE}}`);
    expect(lease.status, lease.text).toBe(201);
    expect(answered(lease.text, 'state')).toEqual(expected());
    const lock = await send('POST', '/api/v1/locks/proto/m', `{"owner":"o","metadata":${VALUE}}`);
    expect(lock.status, lock.text).toBe(200);
    expect(answered(lock.text, 'metadata')).toEqual(expected());
    unpolluted();
  });

  it('a compare-and-swap and a list filter see the key as an ordinary key; no prototype changes', async () => {
    const first = await send('POST', state('proto', 'cas'), `{"value":${VALUE}}`);
    const version = (first.body.data as { version: string }).version;
    const cas = await send(
      'POST',
      state('proto', 'cas'),
      `{"value":{"__proto__":{"step":2}},"if_version_matches":"${version}"}`,
    );
    expect(cas.status, cas.text).toBe(200);
    expect(answered(cas.text)).toEqual(JSON.parse('{"__proto__":{"step":2}}'));
    const filter = encodeURIComponent('__proto__.step = 2');
    const list = await api(p.url, 'GET', `${state('proto')}?filter=${filter}`);
    expect((list.body.data as { items: { key: string }[] }).items.map((e) => e.key)).toEqual(['cas']);
    unpolluted();
  });
});

describe('auth and binding', () => {
  it('refuses to start on a non-loopback address without a token', async () => {
    await expect(createServer({ node: p.node, host: '0.0.0.0', port: 0 })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });

  it('with a token: probes and the OpenAPI document stay open, the API and metrics need it', async () => {
    const server = await createServer({ node: p.node, port: 0, token: 's3cret', defaultMetrics: false });
    const url = await server.listen();
    try {
      expect((await api(url, 'GET', '/healthz')).status).toBe(200);
      expect((await api(url, 'GET', '/openapi.json')).status).toBe(200);
      expect((await api(url, 'GET', '/metrics')).status).toBe(401);
      expect((await api(url, 'GET', '/metrics', { token: 's3cret' })).status).toBe(200);
      const lower = await api(url, 'GET', state('a', 'b'), { headers: { authorization: 'bearer s3cret' } });
      expect(lower.status).toBe(404); // accepted; the key is absent
      const basic = await api(url, 'GET', state('a', 'b'), { headers: { authorization: 'Basic czNjcmV0' } });
      expect(basic.status).toBe(401);
      expect(basic.headers.get('www-authenticate')).toBe('Bearer');
    } finally {
      await server.close();
    }
  });
});

describe('operations', () => {
  it('/healthz and /readyz', async () => {
    expect((await api(p.url, 'GET', '/healthz')).body).toEqual({ status: 200, msg: 'OK', data: { status: 'ok' } });
    const ready = await api(p.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.data).toEqual({ status: 'ready' });
  });

  it('/metrics exports the node hooks and the HTTP requests by route and status', async () => {
    await api(p.url, 'POST', state('m', 'k'), { body: { value: 1 } });
    await api(p.url, 'GET', state('m', 'absent'));
    const res = await api(p.url, 'GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    for (const series of [
      'parley_raft_term',
      'parley_raft_leader_changes_total',
      'parley_raft_commit_latency_seconds_bucket',
      'parley_raft_apply_lag_entries',
      'parley_lock_wait_seconds',
      'parley_gossip_bytes_total',
      'parley_antientropy_repaired_entries_total',
      'parley_replication_lag_seconds',
      'parley_rejections_total',
    ]) {
      expect(res.text).toContain(series);
    }
    expect(res.text).toMatch(
      /parley_http_requests_total\{method="POST",route="\/api\/v1\/distributed-state\/:ns\/:key",status="201"\} \d+/,
    );
    expect(res.text).toMatch(
      /parley_http_requests_total\{method="GET",route="\/api\/v1\/distributed-state\/:ns\/:key",status="404"\} \d+/,
    );
    expect(res.text).toMatch(/parley_raft_term [1-9]/);
  });

  it('/openapi.json is a valid OpenAPI 3 document listing every route', async () => {
    const res = await api(p.url, 'GET', '/openapi.json');
    const validator = new Validator();
    const result = await validator.validate(res.body as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const paths = Object.keys(res.body.paths as object);
    for (const path of [
      '/api/v1/distributed-state/{ns}/{key}',
      '/api/v1/distributed-state/{ns}',
      '/api/v1/locks/{ns}/{key}',
      '/api/v1/locks/{ns}/{key}/renew',
      '/api/v1/locks/{ns}/{key}/release',
      '/api/v1/claims/{ns}/{key}',
      '/api/v1/leases/{ns}/{key}',
      '/api/v1/replicated/{ns}/{key}',
      '/api/v1/replicated/{ns}/{key}/increment',
      '/healthz',
      '/readyz',
      '/metrics',
    ]) {
      expect(paths).toContain(path);
    }
  });
});

describe('claims and leases (seed 003)', () => {
  it('exactly one claim wins; losers read the winner value', async () => {
    const results = await Promise.all(
      ['run-1', 'run-2', 'run-3'].map((runId) =>
        api(p.url, 'POST', '/api/v1/claims/dispatch/daily-etl%3A2026-08-09', { body: { value: { runId } } }),
      ),
    );
    const winners = results.filter((r) => r.status === 201);
    expect(winners).toHaveLength(1);
    const winner = (winners[0]!.body.data as { value: unknown }).value;
    for (const r of results) {
      expect((r.body.data as { value: unknown }).value).toEqual(winner);
      expect((r.body.data as { won: boolean }).won).toBe(r.status === 201);
    }
  });

  it('lease: acquire bumps the epoch, renew, fenced write, release; a stale epoch is lease_lost', async () => {
    const path = '/api/v1/leases/etl/run-123';
    const a = await api(p.url, 'POST', path, { body: { holder: 'w1', ttl_seconds: 120, state: { progress: 0 } } });
    expect(a.status).toBe(201);
    const lease = a.body.data as { epoch: number; holder: string; deadline_at: string; version: string };
    expect(lease).toMatchObject({ holder: 'w1', state: { progress: 0 } });
    expect(lease.deadline_at).toMatch(ISO_MICROS);

    const other = await api(p.url, 'POST', path, { body: { holder: 'w2', ttl_seconds: 120 } });
    expect(other.status).toBe(409);

    const renew = await api(p.url, 'POST', `${path}/renew`, { body: { holder: 'w1', epoch: lease.epoch } });
    expect(renew.status).toBe(200);
    const write = await api(p.url, 'POST', `${path}/write`, {
      body: { holder: 'w1', epoch: lease.epoch, state: { progress: 0.5 } },
    });
    expect(write.status).toBe(200);
    expect((write.body.data as { state: unknown }).state).toEqual({ progress: 0.5 });
    const stale = await api(p.url, 'POST', `${path}/write`, {
      body: { holder: 'w1', epoch: lease.epoch + 7, state: { progress: 1 } },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toBe('lease_lost');

    const release = await api(p.url, 'POST', `${path}/release`, {
      body: { holder: 'w1', epoch: lease.epoch, state: { status: 'completed' } },
    });
    expect(release.status).toBe(200);
    const read = await api(p.url, 'GET', path);
    expect(read.body.data).toMatchObject({ holder: null, epoch: lease.epoch, state: { status: 'completed' } });
    const b = await api(p.url, 'POST', path, { body: { holder: 'w2', ttl_seconds: 60 } });
    expect(b.status).toBe(201);
    expect((b.body.data as { epoch: number }).epoch).toBeGreaterThan(lease.epoch);
    const late = await api(p.url, 'POST', `${path}/renew`, { body: { holder: 'w1', epoch: lease.epoch } });
    expect(late.body.error).toBe('lease_lost');
  });
});

describe('replicated entries', () => {
  it('set, get, increment, list, delete with the same envelope', async () => {
    const base = '/api/v1/replicated/flags';
    const set = await api(p.url, 'POST', `${base}/rollout`, { body: { value: { pct: 25 }, ttl_seconds: 600 } });
    expect(set.status).toBe(201);
    expect(set.body.data).toMatchObject({ namespace: 'flags', key: 'rollout', value: { pct: 25 }, ttl_seconds: 600 });
    expect((set.body.data as { created_at: string }).created_at).toMatch(ISO_MICROS);
    const update = await api(p.url, 'POST', `${base}/rollout`, { body: { value: { pct: 50 } } });
    expect(update.status).toBe(200);
    const inc = await api(p.url, 'POST', `${base}/restarts/increment`, { body: { by: 2 } });
    expect((inc.body.data as { value: unknown }).value).toBe(2);
    const inc2 = await api(p.url, 'POST', `${base}/restarts/increment`, { body: {} });
    expect((inc2.body.data as { value: unknown }).value).toBe(3);
    const list = await api(p.url, 'GET', `${base}?sort_by=key`);
    expect((list.body.data as { items: Array<{ key: string }> }).items.map((e) => e.key)).toEqual([
      'restarts',
      'rollout',
    ]);
    expect((await api(p.url, 'DELETE', `${base}/rollout`)).status).toBe(200);
    expect((await api(p.url, 'GET', `${base}/rollout`)).body.error).toBe('key_not_found');
    expect((await api(p.url, 'DELETE', `${base}/rollout`)).status).toBe(404);
  });
});

describe('watch (server-sent events)', () => {
  /** Resolves once the stream is open (the subscription exists), to a promise of the first `count` events. */
  async function collect(path: string, count: number, headers: Record<string, string> = {}) {
    const controller = new AbortController();
    const response = await fetch(p.url + path, { headers, signal: controller.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events: Array<{ event: string; id?: string; data: Record<string, unknown> }> = [];
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const done = (async () => {
      while (events.length < count) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = block.split('\n');
          const data = lines.find((l) => l.startsWith('data: '));
          if (data !== undefined) {
            events.push({
              event: lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message',
              id: lines.find((l) => l.startsWith('id: '))?.slice(4),
              data: JSON.parse(data.slice(6)),
            });
          }
          end = buffer.indexOf('\n\n');
        }
      }
      controller.abort();
      return events;
    })();
    return { events: done };
  }

  it('strong: every change with its revision; resume after a revision with Last-Event-ID', async () => {
    const watching = await collect(`${state('w')}?watch=true`, 3);
    await api(p.url, 'POST', state('w', 'a'), { body: { value: 1 } });
    await api(p.url, 'POST', state('w', 'b'), { body: { value: 2 } });
    await api(p.url, 'DELETE', state('w', 'a'));
    const events = await watching.events;
    expect(events.map((e) => [e.event, e.data.key])).toEqual([
      ['set', 'a'],
      ['set', 'b'],
      ['delete', 'a'],
    ]);
    // An id names one change: `revision:offset` (its place among the revision's changes).
    expect(events.map((e) => e.id)).toEqual(events.map((e) => `${e.data.revision}:0`));
    const revisions = events.map((e) => Number(e.data.revision));
    expect(revisions[0]).toBeLessThan(revisions[1]!);
    const resumed = await (await collect(`${state('w')}?watch=true`, 1, { 'last-event-id': events[1]!.id! })).events;
    expect(resumed.map((e) => [e.event, e.data.key])).toEqual([['delete', 'a']]);
    // A plain revision (the ids of older servers) resumes after the whole revision.
    const byRevision = await (await collect(`${state('w')}?watch=true`, 1, { 'last-event-id': String(revisions[1]) }))
      .events;
    expect(byRevision.map((e) => [e.event, e.data.key])).toEqual([['delete', 'a']]);
  });

  it('replicated: local changes with their origin', async () => {
    const watching = await collect('/api/v1/replicated/wr?watch=true&prefix=x', 1);
    await api(p.url, 'POST', '/api/v1/replicated/wr/y', { body: { value: 1 } });
    await api(p.url, 'POST', '/api/v1/replicated/wr/x1', { body: { value: 2 } });
    const [event] = await watching.events;
    expect(event).toMatchObject({ event: 'set', data: { key: 'x1', origin: 'local', entry: { value: 2 } } });
  });
});
