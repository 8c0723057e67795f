/**
 * Registers: strong entries read, written, compared-and-set, created only if
 * absent and deleted (plain and conditional), on keys that rotate every 15 s
 * (three at a time) so each key's history stays small enough to search. After
 * the faults, every key is read once more: the durability check and the
 * linearizability checkers see those reads too. Model: `parley-entry`.
 */
import type { HttpOutcome } from '../http.js';
import { seg } from '../http.js';
import { Client, type Context, dataOf, type Interpret, rotatingKey, runClients, type Workload } from '../workload.js';

export const REGISTER_NS = 'tr';
const PERIOD_MS = 15_000;
const SLOTS = 3;

const path = (key: string) => `/api/v1/distributed-state/${REGISTER_NS}/${seg(key)}`;

const observed = new Set(['key_not_found', 'key_already_exists', 'version_mismatch']);

/** A 4xx that is an observation of the entry's state is a `fail` the model checks. */
function observation(o: HttpOutcome) {
  if (o.kind === 'reply' && o.status >= 400 && o.status < 500 && o.body.error && observed.has(o.body.error)) {
    return { type: 'fail' as const, error: o.body.error };
  }
  return undefined;
}

const onGet: Interpret = (o) => {
  if (o.kind === 'reply' && o.status === 200) {
    const d = dataOf(o);
    return { type: 'ok', result: { value: d.value as number, version: d.version as string } };
  }
  return observation(o);
};

const onSet: Interpret = (o) => {
  if (o.kind === 'reply' && (o.status === 200 || o.status === 201)) {
    return { type: 'ok', result: { version: dataOf(o).version as string } };
  }
  return observation(o);
};

const onDelete: Interpret = (o) => {
  if (o.kind === 'reply' && o.status === 200) return { type: 'ok', result: { existed: true } };
  return observation(o);
};

export class RegisterWorkload implements Workload {
  readonly name = 'register';
  private next = 1;
  private readonly versions = new Map<string, string>();
  private readonly keys = new Set<string>();

  async run(ctx: Context): Promise<void> {
    await runClients(ctx, this.name, ctx.options.concurrency, (c) => this.step(ctx, c));
  }

  private async step(ctx: Context, c: Client): Promise<void> {
    const key = rotatingKey(ctx, c.rnd, 'r', PERIOD_MS, SLOTS);
    this.keys.add(key);
    const roll = c.rnd.next();
    const known = this.versions.get(key);
    if (roll < 0.35) {
      await this.get(c, key);
    } else if (roll < 0.6) {
      await this.set(c, key, {});
    } else if (roll < 0.75) {
      await this.set(c, key, { ifVersion: known ?? 'no-such-version' });
    } else if (roll < 0.85) {
      await this.set(c, key, { ifNotExists: true });
    } else if (roll < 0.95) {
      await c.perform('delete', key, null, path(key), { method: 'DELETE' }, onDelete);
    } else {
      const v = known ?? 'no-such-version';
      await c.perform(
        'delete',
        key,
        { ifVersion: v },
        `${path(key)}?if_version_matches=${seg(v)}`,
        { method: 'DELETE' },
        onDelete,
      );
    }
  }

  private async get(c: Client, key: string) {
    const r = await c.perform('get', key, null, path(key), { method: 'GET' }, onGet);
    const v = r.op.type === 'ok' ? (r.op.result as { version: string }).version : undefined;
    if (v !== undefined) this.versions.set(key, v);
    return r;
  }

  private async set(c: Client, key: string, cond: { ifVersion?: string; ifNotExists?: true }) {
    const value = this.next++;
    const body: Record<string, unknown> = { value };
    if (cond.ifVersion !== undefined) body.if_version_matches = cond.ifVersion;
    if (cond.ifNotExists) body.if_not_exists = true;
    const r = await c.perform('set', key, { value, ...cond }, path(key), { method: 'POST', body }, onSet);
    if (r.op.type === 'ok') this.versions.set(key, (r.op.result as { version: string }).version);
  }

  /** Reads every key once more (each until a definite answer, at most 10 tries). */
  async final(ctx: Context): Promise<void> {
    const c = new Client(ctx, this.name, ctx.rnd.fork('register-final'));
    for (const key of this.keys) {
      for (let attempt = 0; attempt < 10; attempt++) {
        const { op } = await this.get(c, key);
        if (op.type !== 'info' && !(op.type === 'fail' && op.error !== 'key_not_found')) break;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}
