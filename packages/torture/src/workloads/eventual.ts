/**
 * Eventual namespaces: last-writer-wins keys, each written by one client
 * through one home node (so the writes of a key are ordered by that node's
 * hybrid clock: the last one acknowledged must win), with occasional deletes;
 * and counters incremented by every client through any node. After the faults
 * are healed, every node's listing is polled until all are equal (at most
 * 120 s): the checks then hold each key to its last acknowledged write (or a
 * later one whose reply was lost) and each counter to the sum of acknowledged
 * increments (plus at most the ones whose outcome is unknown).
 */

import type { Op } from '../history.js';
import { call, seg } from '../http.js';
import { type Client, type Context, dataOf, type Interpret, runClients, sleep, type Workload } from '../workload.js';

export const EVENTUAL_NS = 'te';
const KEYS_PER_CLIENT = 3;
const COUNTERS = 3;
const CONVERGE_MS = 120_000;

const path = (key: string, action = '') => `/api/v1/replicated/${EVENTUAL_NS}/${seg(key)}${action}`;

const onWrite: Interpret = (o) =>
  o.kind === 'reply' && o.status < 300
    ? { type: 'ok', result: { version: (dataOf(o).version as string) ?? null } }
    : undefined;
const onDelete: Interpret = (o) =>
  o.kind === 'reply' && (o.status === 200 || (o.status === 404 && o.body.error === 'key_not_found'))
    ? { type: 'ok', result: { deleted: o.status === 200 } }
    : undefined;

/** One node's view of the namespace after the heal: key → value. */
export type Snapshot = Map<string, unknown>;

export class EventualWorkload implements Workload {
  readonly name = 'eventual';
  private clientIndex = 0;
  private readonly seq = new Map<string, number>();
  /** Per node, its last listing; and whether all matched. */
  snapshots = new Map<string, Snapshot>();
  converged = false;
  convergeMs: number | undefined;

  async run(ctx: Context): Promise<void> {
    await runClients(ctx, this.name, ctx.options.concurrency, (c) => this.step(ctx, c, this.indexOf(c)));
  }

  private readonly indexes = new WeakMap<Client, number>();
  private indexOf(c: Client): number {
    let i = this.indexes.get(c);
    if (i === undefined) {
      i = this.clientIndex++;
      this.indexes.set(c, i);
    }
    return i;
  }

  private async step(ctx: Context, c: Client, index: number): Promise<void> {
    const nodes = ctx.cluster.gateways;
    if (c.rnd.chance(0.4)) {
      const key = `c${c.rnd.int(0, COUNTERS - 1)}`;
      const by = c.rnd.int(1, 3);
      await c.perform('increment', key, by, path(key, '/increment'), { method: 'POST', body: { by } }, onWrite);
      return;
    }
    const j = c.rnd.int(0, KEYS_PER_CLIENT - 1);
    const key = `k${index}-${j}`;
    const home = nodes[(index * KEYS_PER_CLIENT + j) % nodes.length];
    if (home === undefined) return;
    if (c.rnd.chance(0.1)) {
      await c.perform('delete', key, null, path(key), { method: 'DELETE' }, onDelete, home);
      return;
    }
    const value = (this.seq.get(key) ?? 0) + 1;
    this.seq.set(key, value);
    await c.perform('set', key, value, path(key), { method: 'POST', body: { value } }, onWrite, home);
  }

  /** Polls every node's listing until all agree and every counter reached its acknowledged sum, or 120 s pass. */
  async final(ctx: Context): Promise<void> {
    const start = ctx.rec.now();
    const ops = ctx.rec.of(this.name);
    const floors = counterBounds(ops);
    while (ctx.rec.now() - start < CONVERGE_MS) {
      const snaps = new Map<string, Snapshot>();
      for (const n of ctx.cluster.gateways) {
        const s = await listAll(n.url);
        if (s !== undefined) snaps.set(n.name, s);
      }
      this.snapshots = snaps;
      if (snaps.size === ctx.cluster.gateways.length && allEqual([...snaps.values()])) {
        const any = [...snaps.values()][0] as Snapshot;
        const countersDone = [...floors].every(([k, b]) => Number(any.get(k) ?? 0) >= b.acked);
        if (countersDone) {
          this.converged = true;
          this.convergeMs = ctx.rec.now() - start;
          return;
        }
      }
      await sleep(1_000);
    }
  }
}

/** Per counter: the sum of acknowledged increments, and of those whose outcome is unknown. */
export function counterBounds(ops: readonly Op[]): Map<string, { acked: number; unknown: number }> {
  const out = new Map<string, { acked: number; unknown: number }>();
  for (const op of ops) {
    if (op.f !== 'increment') continue;
    const b = out.get(op.key) ?? { acked: 0, unknown: 0 };
    if (op.type === 'ok') b.acked += op.value as number;
    else if (op.type === 'info') b.unknown += op.value as number;
    out.set(op.key, b);
  }
  return out;
}

function allEqual(snaps: readonly Snapshot[]): boolean {
  const [first, ...rest] = snaps;
  if (first === undefined) return false;
  const text = (s: Snapshot) => JSON.stringify([...s].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const t = text(first);
  return rest.every((s) => text(s) === t);
}

/** A node's whole listing of the namespace (undefined when it does not answer). */
async function listAll(url: string): Promise<Snapshot | undefined> {
  const out: Snapshot = new Map();
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const q: string = cursor === null ? '' : `&cursor=${seg(cursor)}`;
    const o = await call(url, `/api/v1/replicated/${EVENTUAL_NS}?limit=1000${q}`, { method: 'GET', timeoutMs: 10_000 });
    if (o.kind !== 'reply' || o.status !== 200) return undefined;
    const d = o.body.data as { items: Array<{ key: string; value: unknown }>; next_cursor: string | null };
    for (const item of d.items) out.set(item.key, item.value);
    cursor = d.next_cursor;
    if (cursor === null) return out;
  }
  return undefined;
}
