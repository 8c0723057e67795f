/**
 * Fuzzing the HTTP surface with a seeded generator (PARLEY_SEED replays a
 * run): random methods, paths, query strings, bodies and headers. Every answer
 * is below 500 and in the envelope; a rejected request changes nothing (the
 * fuzzed namespaces are compared before and after each one); the server keeps
 * serving.
 */
import { type Random, SeededRandom, testSeed, withSeed } from '@parley/interface';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, type Started, startParley } from './http-harness.js';

const REQUESTS = 150;
const NAMESPACES = ['fz', 'fz2'];

let p: Started;
beforeAll(async () => {
  p = await startParley();
});
afterAll(async () => {
  await p?.close();
});

const pick = <T>(r: Random, items: readonly T[]): T => items[r.int(items.length)]!;

const ALPHABET = [
  'a',
  'Z',
  '0',
  '-',
  '_',
  '.',
  '/',
  '%',
  '%2F',
  '%00',
  '%zz',
  '..',
  ' ',
  '?',
  '#',
  '*',
  'é',
  '字',
  '\u0001',
  '"',
  "'",
  '\\',
];

function hostileText(r: Random, maxLength: number): string {
  let out = '';
  const length = r.int(maxLength + 1);
  for (let i = 0; i < length; i++) out += pick(r, ALPHABET);
  return out;
}

function segment(r: Random, known: readonly string[]): string {
  switch (r.int(4)) {
    case 0:
      return pick(r, known);
    case 1:
      return encodeURIComponent(hostileText(r, 12));
    case 2:
      return hostileText(r, 8);
    default:
      return 'k'.repeat(pick(r, [1, 128, 129, 1024, 1025, 5000]));
  }
}

const QUERY_NAMES = [
  'q',
  'filter',
  'sort_by',
  'sort_order',
  'limit',
  'cursor',
  'confirm',
  'pattern',
  'watch',
  'prefix',
  'from_revision',
  'if_version_matches',
  'fence',
  'consistency',
  'zzz',
];
const QUERY_VALUES = [
  '',
  '0',
  '-1',
  '1001',
  'abc',
  'true',
  'maybe',
  'key',
  'desc',
  '((((',
  'value.x%20%3D%3D%201',
  '*',
];

function randomPath(r: Random): string {
  if (r.int(10) === 0)
    return pick(r, ['/', '//', '/api', '/api/v1', '/%', '/..%2f..%2fetc', '/healthz/x', '/metrics?x=1']);
  const resource = pick(r, ['distributed-state', 'locks', 'replicated', 'claims', 'leases', 'bogus']);
  let path = `/api/v1/${resource}/${segment(r, NAMESPACES)}`;
  if (r.int(4) !== 0) path += `/${segment(r, ['a', 'b', 'dispatch%2Fjob'])}`;
  if (r.int(5) === 0) path += `/${pick(r, ['renew', 'release', 'write', 'increment', 'x', ''])}`;
  if (r.int(2) === 0) {
    const params: string[] = [];
    for (let i = r.int(4); i > 0; i--) {
      const value = r.int(4) === 0 ? encodeURIComponent(hostileText(r, 10)) : pick(r, QUERY_VALUES);
      params.push(`${pick(r, QUERY_NAMES)}=${value}`);
    }
    path += `?${params.join('&')}`;
  }
  return path;
}

const FIELDS = [
  'value',
  'ttl_seconds',
  'if_not_exists',
  'if_version_matches',
  'fence',
  'owner',
  'wait_seconds',
  'metadata',
  'holder',
  'epoch',
  'state',
  'by',
  'consistency',
  'extra',
  '__proto__',
  'constructor',
];

/** Valid bodies of each route kind; TTLs long enough that nothing expires during the run. */
const TEMPLATES: ReadonlyArray<Record<string, unknown>> = [
  { value: { n: 1 }, ttl_seconds: 3600 },
  { value: 'v', if_not_exists: true },
  { owner: 'o', ttl_seconds: 3600 },
  { owner: 'o', fence: 1 },
  { holder: 'h', ttl_seconds: 3600, state: {} },
  { holder: 'h', epoch: 1, state: 1 },
  { by: 2 },
];

function randomJson(r: Random, depth: number): unknown {
  switch (r.int(depth > 3 ? 5 : 7)) {
    case 0:
      return null;
    case 1:
      return r.int(2) === 0;
    case 2:
      return pick(r, [0, -1, 1.5, 1e308, 2 ** 53, 3600, 2_592_001]);
    case 3:
      return hostileText(r, 20);
    case 4:
      return pick(r, ['60', 'true', '']);
    case 5:
      return Array.from({ length: r.int(4) }, () => randomJson(r, depth + 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = r.int(5); i > 0; i--) out[pick(r, FIELDS)] = randomJson(r, depth + 1);
      return out;
    }
  }
}

function randomBody(r: Random): string | undefined {
  switch (r.int(7)) {
    case 0:
      return undefined;
    case 1:
      return hostileText(r, 40);
    case 2:
      return JSON.stringify(randomJson(r, 0)).slice(0, 1 + r.int(30)); // often truncated
    case 3:
    case 4: {
      // A plausible body with one field changed, dropped or added: the likeliest to slip through validation.
      const body: Record<string, unknown> = { ...pick(r, TEMPLATES) };
      const field = pick(r, FIELDS);
      if (r.int(3) === 0) delete body[field];
      else body[field] = randomJson(r, 3);
      // Never a blocking wait: the fuzzer sends one request at a time.
      if (typeof body.wait_seconds === 'number' && body.wait_seconds > 0) body.wait_seconds = 0;
      return JSON.stringify(body);
    }
    case 5:
      return JSON.stringify({ value: 'x'.repeat(pick(r, [10, 1_048_577, 1_300_000])) });
    default:
      return JSON.stringify(randomJson(r, 0));
  }
}

function randomHeaders(r: Random): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.int(3) !== 0) {
    headers['content-type'] = pick(r, [
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'application/octet-stream',
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencoded',
    ]);
  }
  if (r.int(4) === 0) headers.authorization = pick(r, ['Bearer', 'Bearer x', 'Basic Zm9vOmJhcg==', 'x'.repeat(3000)]);
  if (r.int(5) === 0) headers['last-event-id'] = pick(r, ['-1', 'abc', '99999999999999999999']);
  if (r.int(6) === 0) headers['content-encoding'] = pick(r, ['gzip', 'br', 'identity']);
  if (r.int(6) === 0) headers.accept = pick(r, ['text/event-stream', '*/*', 'application/xml']);
  return headers;
}

/** Everything the fuzzer may touch, as text: strong and replicated entries of the fuzzed namespaces, and their locks. */
async function snapshot(): Promise<string> {
  const parts: unknown[] = [];
  for (const ns of NAMESPACES) {
    parts.push((await api(p.url, 'GET', `/api/v1/distributed-state/${ns}?limit=1000`)).body);
    parts.push((await api(p.url, 'GET', `/api/v1/replicated/${ns}?limit=1000`)).body);
    for (const key of ['a', 'b']) parts.push((await api(p.url, 'GET', `/api/v1/locks/${ns}/${key}`)).body);
  }
  return JSON.stringify(parts);
}

it('random requests: no 5xx, rejected ones change nothing, the server keeps serving', async () => {
  const seed = testSeed(14_001);
  await withSeed(seed, async () => {
    const r = new SeededRandom(seed);
    for (const ns of NAMESPACES) {
      await api(p.url, 'POST', `/api/v1/distributed-state/${ns}/a`, { body: { value: { seeded: true } } });
      await api(p.url, 'POST', `/api/v1/replicated/${ns}/a`, { body: { value: 1 } });
    }
    let before = await snapshot();
    let rejected = 0;
    let accepted = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const method = pick(r, ['GET', 'POST', 'POST', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS']);
      const path = randomPath(r);
      const body = method === 'GET' || method === 'HEAD' ? undefined : randomBody(r);
      const headers = randomHeaders(r);
      if (method === 'GET' && path.includes('watch=true')) continue; // a valid watch streams until closed
      const res = await api(p.url, method, path, { body, headers });
      const what = `#${i} ${method} ${path.slice(0, 200)} body=${(body ?? '').slice(0, 200)} → ${res.status} ${res.text.slice(0, 300)}`;
      expect(res.status, what).toBeLessThan(500);
      if (method !== 'HEAD' && !path.startsWith('/metrics')) expect(typeof res.body.status, what).toBe('number');
      const after = await snapshot();
      if (res.status >= 400) {
        rejected++;
        expect(after, `rejected request changed state: ${what}`).toBe(before);
      } else {
        accepted++;
      }
      before = after;
    }
    expect(rejected).toBeGreaterThan(REQUESTS / 2);
    expect(accepted).toBeGreaterThan(0);
  });
  expect((await api(p.url, 'GET', '/healthz')).status).toBe(200);
  const write = await api(p.url, 'POST', '/api/v1/distributed-state/fz-after/k', { body: { value: 'still serving' } });
  expect(write.status).toBe(201);
});
