/**
 * The work queue over HTTP (/api/v1/queues/{ns}/{queue}/…): enqueue with de-duplication,
 * take, heartbeat, complete once, a stale fence refused, fail into a dead letter,
 * listing, counts, validation, and the routes in /openapi.json.
 */
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

const Q = '/api/v1/queues/work/jobs';

interface Taken {
  id: string;
  item: unknown;
  attempt: number;
  holder: string;
  fence: number;
  deadline_at: string;
}

async function take(holder: string, extra: object = {}): Promise<Taken | null> {
  const res = await api(p.url, 'POST', `${Q}/take`, { body: { holder, ttl_seconds: 30, ...extra } });
  expect(res.status).toBe(200);
  return (res.body.data as { task: Taken | null }).task;
}

describe('queues over HTTP', () => {
  it('enqueue, de-duplicate, take in order, heartbeat, complete once', async () => {
    const first = await api(p.url, 'POST', `${Q}/tasks`, { body: { item: { n: 1 }, key: 'job-1' } });
    expect(first.status).toBe(201);
    const dup = await api(p.url, 'POST', `${Q}/tasks`, { body: { item: { n: 1 }, key: 'job-1' } });
    expect(dup.status).toBe(200);
    expect(dup.body.data).toEqual({ id: (first.body.data as { id: string }).id, created: false });
    expect((await api(p.url, 'POST', `${Q}/tasks`, { body: { item: { n: 2 } } })).status).toBe(201);

    const a = await take('a');
    expect(a).toMatchObject({ item: { n: 1 }, attempt: 1, holder: 'a' });
    expect(a?.deadline_at).toMatch(ISO_MICROS);
    const fenced = { holder: 'a', fence: a?.fence };
    const hb = await api(p.url, 'POST', `${Q}/tasks/${a?.id}/heartbeat`, { body: { ...fenced, ttl_seconds: 60 } });
    expect(hb.status).toBe(200);
    expect(hb.body.data).toMatchObject({ status: 'taken', holder: 'a' });
    const wrong = await api(p.url, 'POST', `${Q}/tasks/${a?.id}/complete`, {
      body: { holder: 'a', fence: (a?.fence ?? 0) + 5, result: 'x' },
    });
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toBe('lease_lost');
    const done = await api(p.url, 'POST', `${Q}/tasks/${a?.id}/complete`, { body: { ...fenced, result: 'ok' } });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ status: 'done', result: 'ok', holder: null });
    const twice = await api(p.url, 'POST', `${Q}/tasks/${a?.id}/complete`, { body: { ...fenced, result: 'again' } });
    expect(twice.body.error).toBe('lease_lost');

    expect((await take('b'))?.item).toEqual({ n: 2 });
    expect(await take('c')).toBeNull();
    const stats = await api(p.url, 'GET', Q);
    expect(stats.body.data).toEqual({ namespace: 'work', queue: 'jobs', ready: 0, taken: 1, done: 1, dead: 0 });
    const listed = await api(p.url, 'GET', `${Q}/tasks?status=done`);
    expect((listed.body.data as { items: Array<{ result: unknown }> }).items.map((t) => t.result)).toEqual(['ok']);
    const read = await api(p.url, 'GET', `${Q}/tasks/${a?.id}`);
    expect(read.body.data).toMatchObject({ status: 'done', key: 'job-1', attempts: 1 });
    expect((await api(p.url, 'GET', `${Q}/tasks/999`)).status).toBe(404);
  });

  it('fail with max_attempts 1 dead-letters the task', async () => {
    const path = '/api/v1/queues/work/flaky';
    await api(p.url, 'POST', `${path}/tasks`, { body: { item: 'x' } });
    const res = await api(p.url, 'POST', `${path}/take`, { body: { holder: 'w' } });
    const t = (res.body.data as { task: Taken }).task;
    const failed = await api(p.url, 'POST', `${path}/tasks/${t.id}/fail`, {
      body: { holder: 'w', fence: t.fence, reason: { error: 'boom' }, max_attempts: 1 },
    });
    expect(failed.status).toBe(200);
    expect(failed.body.data).toMatchObject({ status: 'dead', error: { error: 'boom' } });
  });

  it('bad input is a typed 4xx', async () => {
    for (const [path, body] of [
      [`${Q}/take`, { holder: 'w', ttl_seconds: 0 }],
      [`${Q}/take`, {}],
      [`${Q}/tasks`, { item: 1, colour: 'red' }],
      [`${Q}/tasks/abc/complete`, { holder: 'w', fence: 1 }],
      ['/api/v1/queues/work/a%2Fb/take', { holder: 'w' }],
    ] as const) {
      const res = await api(p.url, 'POST', path, { body });
      expect(res.status, path).toBe(400);
      expect(res.body.error).toBe('invalid_argument');
    }
    const big = await api(p.url, 'POST', `${Q}/tasks`, { body: { item: 'x'.repeat(100), max_item_bytes: 10 } });
    expect(big.status).toBe(413);
  });

  it('the queue routes are in a valid /openapi.json', async () => {
    const res = await api(p.url, 'GET', '/openapi.json');
    const result = await new Validator().validate(res.body as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    const paths = Object.keys(res.body.paths as object);
    for (const path of [
      '/api/v1/queues/{ns}/{queue}',
      '/api/v1/queues/{ns}/{queue}/tasks',
      '/api/v1/queues/{ns}/{queue}/take',
      '/api/v1/queues/{ns}/{queue}/tasks/{id}',
      '/api/v1/queues/{ns}/{queue}/tasks/{id}/complete',
      '/api/v1/queues/{ns}/{queue}/tasks/{id}/fail',
      '/api/v1/queues/{ns}/{queue}/tasks/{id}/heartbeat',
    ]) {
      expect(paths).toContain(path);
    }
  });
});
