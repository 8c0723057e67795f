/**
 * The bounds of watch streams and the remaining request guards: the stream
 * cap, a slow reader dropped once its unsent bytes pass the bound, watch
 * parameters, malformed URLs, and fence parameters of a delete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, eventually, type Started, startParley } from './http-harness.js';

let p: Started;
beforeAll(async () => {
  p = await startParley(
    { maxWatchStreams: 2, sse: { maxBufferedBytes: 64 * 1024, maxEarlyEvents: 3 } },
    { raft: { maxWatchHistory: 50 } },
  );
});
afterAll(async () => {
  await p?.close();
});

const openStreams = async () => {
  const res = await api(p.url, 'GET', '/metrics');
  return Number(/^parley_http_watch_streams (\d+)$/m.exec(res.text)?.[1]);
};

describe('watch streams', () => {
  it('at most maxWatchStreams are open; a closed one frees its place', async () => {
    const a = new AbortController();
    const b = new AbortController();
    const first = await fetch(`${p.url}/api/v1/distributed-state/cap?watch=true`, { signal: a.signal });
    const second = await fetch(`${p.url}/api/v1/replicated/cap?watch=true`, { signal: b.signal });
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await api(p.url, 'GET', '/api/v1/distributed-state/cap?watch=true');
    expect(third.status).toBe(503);
    expect(third.body.error).toBe('too_many_streams');
    expect(third.headers.get('retry-after')).toBe('5');
    a.abort();
    b.abort();
    await eventually(async () => (await openStreams()) === 0, 10_000);
  });

  it('a reader that does not read is disconnected once its unsent data passes the bound', async () => {
    const controller = new AbortController();
    const slow = await fetch(`${p.url}/api/v1/distributed-state/slow?watch=true`, { signal: controller.signal });
    expect(slow.status).toBe(200);
    expect(await openStreams()).toBe(1);
    const big = 'x'.repeat(512 * 1024);
    // Kernel socket buffers absorb the first megabytes; the stream is dropped once Node's own buffer passes 64 KiB.
    for (let i = 0; i < 40 && (await openStreams()) === 1; i++) {
      const res = await api(p.url, 'POST', `/api/v1/distributed-state/slow/k${i % 4}`, { body: { value: big } });
      expect(res.status).toBeLessThan(300);
    }
    await eventually(async () => (await openStreams()) === 0, 10_000);
    controller.abort();
  });

  it('watch parameters are checked', async () => {
    for (const path of [
      '/api/v1/distributed-state/w?watch=true&q=x',
      '/api/v1/distributed-state/w?watch=true&limit=5',
      '/api/v1/distributed-state/w?watch=true&from_revision=abc',
      '/api/v1/distributed-state/w?from_revision=3',
      '/api/v1/replicated/w?watch=true&from_revision=3',
      '/api/v1/replicated/w?watch=yes',
    ]) {
      const res = await api(p.url, 'GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.error, path).toBe('invalid_argument');
    }
    const resume = await api(p.url, 'GET', '/api/v1/distributed-state/w?watch=true', {
      headers: { 'last-event-id': 'not-a-number' },
    });
    expect(resume.status).toBe(400);
  });
});

describe('request guards', () => {
  it('a malformed URL is a 400 in the envelope', async () => {
    const res = await api(p.url, 'GET', '/api/v1/distributed-state/ns/%zz');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, msg: expect.any(String), error: 'invalid_argument' });
  });

  it('delete: fence_namespace needs fence; a stale fence or version deletes nothing', async () => {
    await api(p.url, 'POST', '/api/v1/distributed-state/g/k', { body: { value: 1 } });
    const orphan = await api(p.url, 'DELETE', '/api/v1/distributed-state/g/k?fence_namespace=g');
    expect(orphan.status).toBe(400);
    const wrongVersion = await api(p.url, 'DELETE', '/api/v1/distributed-state/g/k?if_version_matches=nope');
    expect(wrongVersion.status).toBe(409);
    expect(wrongVersion.body.error).toBe('version_mismatch');
    const lock = await api(p.url, 'POST', '/api/v1/locks/g/k', { body: { owner: 'a', ttl_seconds: 30 } });
    const fence = (lock.body.data as { fence: number }).fence;
    await api(p.url, 'POST', '/api/v1/locks/g/k/release', { body: { owner: 'a', fence } });
    await api(p.url, 'POST', '/api/v1/locks/g/k', { body: { owner: 'b', ttl_seconds: 30 } });
    const stale = await api(p.url, 'DELETE', `/api/v1/distributed-state/g/k?fence=${fence}`);
    expect(stale.status).toBe(409);
    expect(stale.body.error).toBe('fence_stale');
    expect((await api(p.url, 'GET', '/api/v1/distributed-state/g/k')).status).toBe(200);
  });

  it('lock metadata over 16 KB and a TTL over an hour are refused', async () => {
    const meta = await api(p.url, 'POST', '/api/v1/locks/g/m', {
      body: { owner: 'a', metadata: 'x'.repeat(17 * 1024) },
    });
    expect(meta.status).toBe(413);
    expect(meta.body.error).toBe('value_too_large');
    const ttl = await api(p.url, 'POST', '/api/v1/locks/g/m', { body: { owner: 'a', ttl_seconds: 3601 } });
    expect(ttl.status).toBe(400);
    const info = await api(p.url, 'GET', '/api/v1/locks/g/m');
    expect(info.body.data).toMatchObject({ held: false });
  });
});

describe('lock waits', () => {
  it('a waiter that disconnects before its grant does not keep the lock', async () => {
    const path = '/api/v1/locks/g/abandoned';
    const a = await api(p.url, 'POST', path, { body: { owner: 'a', ttl_seconds: 60 } });
    const fence = (a.body.data as { fence: number }).fence;
    const controller = new AbortController();
    const waiting = fetch(p.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ owner: 'quitter', ttl_seconds: 60, wait_seconds: 30 }),
      signal: controller.signal,
    }).catch(() => undefined);
    await eventually(
      async () => ((await api(p.url, 'GET', path)).body.data as { waiters: number }).waiters === 1,
      10_000,
    );
    controller.abort();
    await waiting;
    await api(p.url, 'POST', `${path}/release`, { body: { owner: 'a', fence } });
    // The quitter is granted (it was first in the queue), then the server hands the lock on at once.
    await eventually(async () => {
      const info = (await api(p.url, 'GET', path)).body.data as { held: boolean; last_fence: number };
      return !info.held && info.last_fence > fence;
    }, 10_000);
    const next = await api(p.url, 'POST', path, { body: { owner: 'c', ttl_seconds: 60 } });
    expect(next.status).toBe(200);
  });
});

describe('HEAD and unexpected errors', () => {
  it('HEAD on a watch answers the stream headers and opens nothing', async () => {
    const res = await fetch(`${p.url}/api/v1/distributed-state/h?watch=true`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(await openStreams()).toBe(0);
    const again = await api(p.url, 'GET', '/healthz'); // the connection is still usable
    expect(again.status).toBe(200);
  });

  it('an error that is no client mistake is a 500 internal envelope, reported to onUnexpectedError', async () => {
    const { createServer } = await import('@parley/server');
    const seen: string[] = [];
    const server = await createServer({
      node: p.node,
      port: 0,
      defaultMetrics: false,
      onUnexpectedError: (err, route) => seen.push(`${route}: ${(err as Error).message}`),
    });
    // A route of this test only, standing for a bug in a handler.
    server.app.get('/boom', async () => {
      throw new TypeError('cannot read properties of undefined');
    });
    const url = await server.listen();
    try {
      const res = await api(url, 'GET', '/boom');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ status: 500, msg: 'internal error', error: 'internal' });
      expect(seen).toEqual(['GET /boom: cannot read properties of undefined']);
    } finally {
      await server.close();
    }
  });
});

describe('watch resume', () => {
  /** Reads a stream until `count` event ids arrived (then aborts it), or until it ends. */
  async function ids(path: string, count: number, headers: Record<string, string> = {}) {
    const controller = new AbortController();
    const response = await fetch(p.url + path, { headers, signal: controller.signal });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let ended = false;
    // Ids are `revision:offset`; these tests write one change per revision and look at the revision.
    const found = () => [...text.matchAll(/^id: (\d+):0$/gm)].map((m) => Number(m[1]));
    const reading = (async () => {
      while (found().length < count) {
        const { value, done } = await reader.read();
        if (done) {
          ended = true;
          break;
        }
        text += decoder.decode(value, { stream: true });
      }
    })();
    return {
      /** Resolves once the reader has its ids or the stream ended. */
      done: reading.then(() => {
        if (!ended) controller.abort();
        return { ids: found(), ended };
      }),
    };
  }

  it('a replay longer than the early-event bound ends the stream; the reader resumes from its last id', async () => {
    const live = await ids('/api/v1/distributed-state/early?watch=true', 5);
    for (let i = 0; i < 5; i++)
      await api(p.url, 'POST', `/api/v1/distributed-state/early/k${i}`, { body: { value: i } });
    const written = (await live.done).ids;
    expect(written).toHaveLength(5);

    // Five changes to replay; three fit before the stream opens, so it sends those and ends.
    const replay = await (await ids(`/api/v1/distributed-state/early?watch=true&from_revision=${written[0]! - 1}`, 5))
      .done;
    expect(replay).toEqual({ ids: written.slice(0, 3), ended: true });
    // Resuming from the last id gets the rest, and the stream stays open.
    const rest = await (
      await ids('/api/v1/distributed-state/early?watch=true', 2, { 'last-event-id': String(written[2]) })
    ).done;
    expect(rest).toEqual({ ids: written.slice(3), ended: false });
  });

  it('a resume point older than the kept history is a 410 compacted that says what to do', async () => {
    for (let i = 0; i < 60; i++)
      await api(p.url, 'POST', `/api/v1/distributed-state/churn/k${i % 5}`, { body: { value: i } });
    const res = await api(p.url, 'GET', '/api/v1/distributed-state/churn?watch=true&from_revision=1');
    expect(res.status).toBe(410);
    expect(res.body.error).toBe('compacted');
    expect(res.body.msg).toContain('list the namespace');
  });
});
