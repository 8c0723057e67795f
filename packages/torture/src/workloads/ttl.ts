/**
 * TTL'd entries: each client creates fresh keys (create-only, `ttl_seconds`
 * drawn from the run's range) through a random node, then, until the TTL and
 * ε have passed with a margin, reads the key and now and then tries to take it
 * over with another create-only write. The time checks hold these calls to
 * "never early" and "never extended" against the harness's clock, and the
 * reported `created_at`/`expires_at` to the real time of the write.
 */
import { seg } from '../http.js';
import { type Client, type Context, dataOf, type Interpret, runClients, sleep, type Workload } from '../workload.js';

export const TTL_NS = 'tt';
/** How long after TTL + ε a key is still watched. */
const AFTER_MS = 2_000;

const path = (key: string) => `/api/v1/distributed-state/${TTL_NS}/${seg(key)}`;

const onCreate: Interpret = (o) => {
  if (o.kind === 'reply' && o.status === 201) {
    const d = dataOf(o);
    return {
      type: 'ok',
      result: { version: d.version as string },
      extra: { createdAt: d.created_at as string, expiresAt: d.expires_at as string, ttl: d.ttl_seconds as number },
    };
  }
  if (o.kind === 'reply' && o.status === 409 && o.body.error === 'key_already_exists')
    return { type: 'fail', error: 'key_already_exists' };
  return undefined;
};

const onGet: Interpret = (o) => {
  if (o.kind === 'reply' && o.status === 200) {
    const d = dataOf(o);
    return {
      type: 'ok',
      result: { value: d.value as string, version: d.version as string },
      extra: { expiresAt: d.expires_at as string },
    };
  }
  if (o.kind === 'reply' && o.status === 404 && o.body.error === 'key_not_found') return { type: 'ok', result: null };
  return undefined;
};

export class TtlWorkload implements Workload {
  readonly name = 'ttl';
  private next = 0;

  async run(ctx: Context): Promise<void> {
    await runClients(ctx, this.name, ctx.options.concurrency, (c) => this.step(ctx, c));
  }

  private async step(ctx: Context, c: Client): Promise<void> {
    const key = `t${this.next++}`;
    const [lo, hi] = ctx.options.ttlSeconds;
    const ttl = c.rnd.int(lo, hi);
    const value = `${key}-w`;
    const { op } = await c.perform(
      'create',
      key,
      { value, ttlMs: ttl * 1000 },
      path(key),
      { method: 'POST', body: { value, ttl_seconds: ttl, if_not_exists: true } },
      onCreate,
    );
    if (op.type !== 'ok') return;
    const end = op.invokeMs + ttl * 1000 + ctx.options.skewMs + AFTER_MS;
    let takes = 0;
    while (ctx.rec.now() < end && !ctx.stopping.value) {
      await sleep(c.rnd.int(100, 400));
      if (c.rnd.chance(0.8)) {
        await c.perform('get', key, null, path(key), { method: 'GET' }, onGet);
        continue;
      }
      const taker = `${key}-t${takes++}`;
      const r = await c.perform(
        'take',
        key,
        { value: taker, ttlMs: ttl * 1000 },
        path(key),
        { method: 'POST', body: { value: taker, ttl_seconds: ttl, if_not_exists: true } },
        onCreate,
      );
      // A successful take starts a new lifetime: this key is done.
      if (r.op.type === 'ok') return;
    }
  }
}
