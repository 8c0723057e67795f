/**
 * Locks with fenced writes and zombie holders. Each acquisition has an owner
 * of its own; a holder writes to a register guarded by its fence, may renew,
 * and then releases — or turns zombie: it stops renewing, sleeps past its TTL
 * and writes with its old fence again (refused with `fence_stale` once a newer
 * holder exists), then tries to renew. Lock keys rotate every 60 s, two at a
 * time. Model: `parley-lock`, time-aware (each acquire and renew carries its
 * TTL and the run's ε).
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

export const LOCK_NS = 'tl';
export const LOCK_DATA_NS = 'tl-data';
const PERIOD_MS = 60_000;
const SLOTS = 2;

const lockPath = (key: string, action = '') => `/api/v1/locks/${LOCK_NS}/${seg(key)}${action}`;

function conflict(o: HttpOutcome, codes: Record<string, string>) {
  if (o.kind === 'reply' && o.status >= 400 && o.status < 500 && o.body.error && codes[o.body.error]) {
    return { type: 'fail' as const, error: codes[o.body.error] as string };
  }
  return undefined;
}

const onAcquire: Interpret = (o) =>
  o.kind === 'reply' && o.status === 200
    ? { type: 'ok', result: { fence: dataOf(o).fence as number }, extra: { expiresAt: dataOf(o).expires_at as string } }
    : conflict(o, { lock_held: 'lock_held' });

/** A renew of a grant that is over answers `key_not_found` (no such holder) or `fence_stale`: both say the grant ended. */
const onRenew: Interpret = (o) =>
  o.kind === 'reply' && o.status === 200
    ? { type: 'ok', result: { fence: dataOf(o).fence as number } }
    : conflict(o, { key_not_found: 'lease_lost', fence_stale: 'fence_stale' });

const onRelease: Interpret = (o) =>
  o.kind === 'reply' && o.status === 200
    ? { type: 'ok', result: { released: dataOf(o).released as boolean } }
    : undefined;

const onWrite: Interpret = (o) =>
  o.kind === 'reply' && (o.status === 200 || o.status === 201)
    ? { type: 'ok', result: { version: dataOf(o).version as string } }
    : conflict(o, { fence_stale: 'fence_stale' });

const onGet: Interpret = (o) => {
  if (!(o.kind === 'reply' && o.status === 200)) return undefined;
  const d = dataOf(o);
  const holder = d.holder as { owner: string; fence: number } | null;
  return { type: 'ok', result: d.held === true && holder ? { owner: holder.owner, fence: holder.fence } : null };
};

export class LockWorkload implements Workload {
  readonly name = 'lock';
  private acquisitions = 0;
  private writes = 0;

  async run(ctx: Context): Promise<void> {
    await runClients(ctx, this.name, ctx.options.concurrency, (c) => this.step(ctx, c));
  }

  private async step(ctx: Context, c: Client): Promise<void> {
    const key = rotatingKey(ctx, c.rnd, 'l', PERIOD_MS, SLOTS);
    if (c.rnd.chance(0.15)) {
      await c.perform('get', key, null, lockPath(key), { method: 'GET' }, onGet);
      return;
    }
    const owner = `o${this.acquisitions++}`;
    const [lo, hi] = ctx.options.ttlSeconds;
    const ttl = c.rnd.int(lo, hi);
    const time = { ttlMs: ttl * 1000, skewMs: ctx.options.skewMs };
    const wait = c.rnd.chance(0.2) ? c.rnd.int(1, 2) : 0;
    const { op } = await c.perform(
      'acquire',
      key,
      { owner, ...time },
      lockPath(key),
      { method: 'POST', body: { owner, ttl_seconds: ttl, wait_seconds: wait }, timeoutMs: 12_000 + wait * 1000 },
      onAcquire,
    );
    if (op.type !== 'ok') return;
    const fence = (op.result as { fence: number }).fence;
    const rounds = c.rnd.int(1, 3);
    for (let i = 0; i < rounds && !ctx.stopping.value; i++) {
      await sleep(c.rnd.int(20, Math.max(50, (ttl * 1000) / 4)));
      await this.write(c, key, owner, fence);
      if (c.rnd.chance(0.5)) {
        const r = await c.perform(
          'renew',
          key,
          { owner, fence, ...time },
          lockPath(key, '/renew'),
          { method: 'POST', body: { owner, fence, ttl_seconds: ttl } },
          onRenew,
        );
        if (r.op.type !== 'ok') return;
      }
    }
    if (c.rnd.chance(0.3) && !ctx.stopping.value) {
      // A zombie: it stops renewing, outlives its TTL, and writes with its old fence.
      await sleep(ttl * 1000 + c.rnd.int(200, 1500));
      await this.write(c, key, owner, fence);
      await c.perform(
        'renew',
        key,
        { owner, fence, ...time },
        lockPath(key, '/renew'),
        { method: 'POST', body: { owner, fence, ttl_seconds: ttl } },
        onRenew,
      );
      return;
    }
    await c.perform(
      'release',
      key,
      { owner, fence },
      lockPath(key, '/release'),
      { method: 'POST', body: { owner, fence } },
      onRelease,
    );
  }

  private async write(c: Client, key: string, owner: string, fence: number): Promise<void> {
    const value = this.writes++;
    await c.perform(
      'write',
      key,
      { owner, fence, value },
      `/api/v1/distributed-state/${LOCK_DATA_NS}/${seg(key)}`,
      { method: 'POST', body: { value, fence: { namespace: LOCK_NS, key, fence } } },
      onWrite,
    );
  }
}
