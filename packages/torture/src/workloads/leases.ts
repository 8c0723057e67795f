/**
 * Leases: each acquisition has a holder of its own; the holder writes state
 * under its (holder, epoch), may renew, then releases — or lets the lease run
 * out and writes again (refused with `lease_lost` once a newer epoch exists).
 * Keys rotate every 60 s, two at a time. Model: `parley-lease`, time-aware.
 */
import { type HttpOutcome, seg } from '../http.js';
import {
  type Client,
  type Context,
  dataOf,
  type Interpret,
  rotatingKey,
  runClients,
  sleep,
  type Workload,
} from '../workload.js';

export const LEASE_NS = 'tls';
const PERIOD_MS = 60_000;
const SLOTS = 2;

const leasePath = (key: string, action = '') => `/api/v1/leases/${LEASE_NS}/${seg(key)}${action}`;

function conflict(o: HttpOutcome, codes: readonly string[]) {
  if (o.kind === 'reply' && o.status >= 400 && o.status < 500 && o.body.error && codes.includes(o.body.error)) {
    return { type: 'fail' as const, error: o.body.error };
  }
  return undefined;
}

const onAcquire: Interpret = (o) =>
  o.kind === 'reply' && o.status === 201
    ? {
        type: 'ok',
        result: { epoch: dataOf(o).epoch as number },
        extra: { deadlineAt: dataOf(o).deadline_at as string },
      }
    : conflict(o, ['lock_held']);

const onGuarded: Interpret = (o) =>
  o.kind === 'reply' && o.status === 200
    ? { type: 'ok', result: { epoch: (dataOf(o).epoch as number) ?? null } }
    : conflict(o, ['lease_lost']);

const onRelease: Interpret = (o) =>
  o.kind === 'reply' && o.status === 200
    ? { type: 'ok', result: { released: dataOf(o).released !== false } }
    : conflict(o, ['lease_lost']);

/**
 * A lease read answers the document, holder and deadline included, whether or not the
 * deadline has passed (the holder stays until a release or a new holder). It shows a live
 * grant when its deadline is ahead of the real time of the reply by more than ε, a free
 * one when it is behind the real time of the call by more than ε; in between the answer
 * says nothing certain and is left out of the models (a `fail` with no observed code).
 */
function onGet(skewMs: number): Interpret {
  return (o, t) => {
    if (o.kind === 'reply' && o.status === 404 && o.body.error === 'key_not_found') return { type: 'ok', result: null };
    if (!(o.kind === 'reply' && o.status === 200)) return undefined;
    const d = dataOf(o);
    const holder = d.holder as string | null;
    const deadline = Date.parse(d.deadline_at as string);
    const extra = { deadlineAt: d.deadline_at as string };
    if (holder === null || deadline < t.invokeWall - skewMs) return { type: 'ok', result: null, extra };
    if (deadline > t.replyWall + skewMs) return { type: 'ok', result: { holder, epoch: d.epoch as number }, extra };
    return { type: 'fail', error: 'expiry_unclear', extra };
  };
}

export class LeaseWorkload implements Workload {
  readonly name = 'lease';
  private acquisitions = 0;
  private writes = 0;

  async run(ctx: Context): Promise<void> {
    await runClients(ctx, this.name, ctx.options.concurrency, (c) => this.step(ctx, c));
  }

  private async step(ctx: Context, c: Client): Promise<void> {
    const key = rotatingKey(ctx, c.rnd, 's', PERIOD_MS, SLOTS);
    if (c.rnd.chance(0.15)) {
      await c.perform('get', key, null, leasePath(key), { method: 'GET' }, onGet(ctx.options.skewMs));
      return;
    }
    const holder = `h${this.acquisitions++}`;
    const [lo, hi] = ctx.options.ttlSeconds;
    const ttl = c.rnd.int(lo, hi);
    const time = { ttlMs: ttl * 1000, skewMs: ctx.options.skewMs };
    const { op } = await c.perform(
      'acquire',
      key,
      { holder, ...time },
      leasePath(key),
      { method: 'POST', body: { holder, ttl_seconds: ttl } },
      onAcquire,
    );
    if (op.type !== 'ok') return;
    const epoch = (op.result as { epoch: number }).epoch;
    const rounds = c.rnd.int(1, 3);
    for (let i = 0; i < rounds && !ctx.stopping.value; i++) {
      await sleep(c.rnd.int(20, Math.max(50, (ttl * 1000) / 4)));
      if (!(await this.write(c, key, holder, epoch))) return;
      if (c.rnd.chance(0.5)) {
        const r = await c.perform(
          'renew',
          key,
          { holder, epoch, ...time },
          leasePath(key, '/renew'),
          { method: 'POST', body: { holder, epoch, ttl_seconds: ttl } },
          onGuarded,
        );
        if (r.op.type !== 'ok') return;
      }
    }
    if (c.rnd.chance(0.3) && !ctx.stopping.value) {
      // Lets it run out, then writes under the old epoch.
      await sleep(ttl * 1000 + c.rnd.int(200, 1500));
      await this.write(c, key, holder, epoch);
      return;
    }
    await c.perform(
      'release',
      key,
      { holder, epoch },
      leasePath(key, '/release'),
      { method: 'POST', body: { holder, epoch } },
      onRelease,
    );
  }

  private async write(c: Client, key: string, holder: string, epoch: number): Promise<boolean> {
    const state = this.writes++;
    const { op } = await c.perform(
      'write',
      key,
      { holder, epoch, state },
      leasePath(key, '/write'),
      { method: 'POST', body: { holder, epoch, state } },
      onGuarded,
    );
    return op.type === 'ok';
  }
}
