/**
 * Errors a person can read, at the HTTP door: validation failures name the
 * field (no schema paths), the bound with its unit, the allowed values and the
 * unknown field; 415 for a body that is not sent as JSON, 405 with `Allow` for
 * a method a path does not take; lease errors say lease; a fence on a key that
 * never had a lock says so. And the OpenAPI document's bearer scheme.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type Started, startParley } from './http-harness.js';

let p: Started;
beforeAll(async () => {
  p = await startParley();
});
afterAll(async () => {
  await p?.close();
});

const state = (key: string) => `/api/v1/distributed-state/he/${key}`;
const msgOf = async (method: string, path: string, body?: unknown) => {
  const res = await api(p.url, method, path, body === undefined ? {} : { body });
  expect(res.body.error, JSON.stringify(res.body)).toBe('invalid_argument');
  expect(res.status).toBe(400);
  return res.body.msg as string;
};

describe('validation messages', () => {
  it('name the field and the bound with its unit, never a schema path', async () => {
    expect(await msgOf('POST', state('k'), { value: 1, ttl_seconds: 2_592_001 })).toBe(
      'ttl_seconds must be at most 30 days (2592000)',
    );
    expect(await msgOf('POST', state('k'), { value: 1, ttl_seconds: 0 })).toBe('ttl_seconds must be at least 1');
    expect(await msgOf('POST', state('k'), { value: 1, ttl_seconds: '60' })).toBe('ttl_seconds must be an integer');
    expect(await msgOf('POST', '/api/v1/locks/he/l', { owner: 'a', ttl_seconds: 7200 })).toBe(
      'ttl_seconds must be at most 1 hour (3600)',
    );
  });

  it('list the allowed values, and name an unknown or a missing field', async () => {
    expect(await msgOf('GET', '/api/v1/distributed-state/he?sort_by=value')).toBe(
      "sort_by must be one of 'key', 'created_at', 'updated_at'",
    );
    expect(await msgOf('GET', '/api/v1/distributed-state/he?colour=red')).toMatch(
      /^unknown query parameter 'colour' \(known: q, filter, .*prefix/,
    );
    expect(await msgOf('POST', state('k'), { value: 1, ttl: 60 })).toBe(
      "unknown body field 'ttl' (known: value, ttl_seconds, if_not_exists, if_version_matches, fence)",
    );
    expect(await msgOf('POST', '/api/v1/locks/he/l', {})).toBe("missing required body field 'owner'");
    // A field of several forms is described by its forms, not by the first one's complaint.
    expect(await msgOf('POST', state('k'), { value: 1, fence: { namespace: 'he' } })).toBe(
      'fence must be an integer or an object {namespace, key, fence}',
    );
    expect(await msgOf('GET', '/api/v1/distributed-state/he?limit=ten')).toBe(
      'limit must be a whole number (digits only, at most 4)',
    );
    const ns = await msgOf('GET', '/api/v1/distributed-state/-bad/k');
    expect(ns).toMatch(/^namespace is not valid: Letters, digits/);
    for (const msg of [ns]) expect(msg).not.toMatch(/body\/|querystring\/|params\//);
  });
});

describe('content type and method', () => {
  it('a body that is not sent as application/json is 415, with or without a Content-Type; nothing is written', async () => {
    const wrong = await api(p.url, 'POST', state('ct'), {
      body: { value: 1 },
      headers: { 'content-type': 'text/plain' },
    });
    expect(wrong.status).toBe(415);
    expect(wrong.body).toMatchObject({ status: 415, error: 'unsupported_media_type' });
    expect(wrong.body.msg).toContain("not 'text/plain'");
    const none = await fetch(`${p.url}${state('ct')}`, { method: 'POST', body: new Uint8Array([123, 125]) });
    expect(none.status).toBe(415);
    expect(((await none.json()) as { msg: string }).msg).toContain('no Content-Type was sent');
    const charset = await api(p.url, 'POST', state('ct2'), {
      body: { value: 1 },
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(charset.status).toBe(201);
    expect((await api(p.url, 'GET', state('ct'))).status).toBe(404);
  });

  it('a method the path does not take is 405 with Allow; an unknown path stays 404', async () => {
    const res = await api(p.url, 'PUT', state('k'), { body: { value: 1 } });
    expect(res.status).toBe(405);
    expect(res.body.error).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toBe('DELETE, GET, HEAD, POST');
    const renew = await api(p.url, 'GET', '/api/v1/locks/he/l/renew');
    expect(renew.status).toBe(405);
    expect(renew.headers.get('allow')).toBe('POST');
    expect((await api(p.url, 'GET', '/api/v1/nothing-here')).status).toBe(404);
  });
});

describe('lease and fence messages', () => {
  it('a lease held by another says lease, not lock', async () => {
    const path = '/api/v1/leases/he/leader';
    expect((await api(p.url, 'POST', path, { body: { holder: 'a', ttl_seconds: 60 } })).status).toBe(201);
    const held = await api(p.url, 'POST', path, { body: { holder: 'b', ttl_seconds: 60 } });
    expect(held.body.error).toBe('lock_held');
    expect(held.body.msg).toBe("lease on 'he/leader' is held by 'a'");
  });

  it('a fenced write on a key that never had a lock says so', async () => {
    const res = await api(p.url, 'POST', state('fenced'), {
      body: { value: 1, fence: 3 },
    });
    expect(res.body.error, JSON.stringify(res.body)).toBe('fence_stale');
    expect(res.body.msg).toContain("no lock is held or known on 'he/fenced'");
    expect(res.body.msg).not.toContain('0 was granted');
  });
});

describe('OpenAPI', () => {
  it('puts the bearer scheme on every protected operation and none on the public probes', async () => {
    const withToken = await startParley({ token: 'secret' });
    try {
      const doc = (await (await fetch(`${withToken.url}/openapi.json`)).json()) as {
        security: unknown;
        paths: Record<string, Record<string, { security?: unknown }>>;
      };
      expect(doc.security).toEqual([{ bearer: [] }]);
      expect(doc.paths['/healthz']?.get?.security).toEqual([]);
      expect(doc.paths['/readyz']?.get?.security).toEqual([]);
      const protectedOps = Object.entries(doc.paths)
        .filter(([path]) => !['/healthz', '/readyz', '/openapi.json'].includes(path))
        .flatMap(([, ops]) => Object.values(ops));
      expect(protectedOps.length).toBeGreaterThan(10);
      for (const op of protectedOps) expect(op.security).toEqual([{ bearer: [] }]);
    } finally {
      await withToken.close();
    }
    const open = (await (await fetch(`${p.url}/openapi.json`)).json()) as { security: unknown };
    expect(open.security).toEqual([{}, { bearer: [] }]);
  });
});
