/**
 * Claims: every client races to claim the same key (it changes every 3 s); one
 * winner, and every loser is told the winner's value and version; reads of the
 * claimed entry through `/distributed-state` see the same. Model:
 * `parley-entry` (`claim` and `get`).
 */
import { seg } from '../http.js';
import {
  type Client,
  type Context,
  dataOf,
  type Interpret,
  rotatingKey,
  runClients,
  type Workload,
} from '../workload.js';

export const CLAIM_NS = 'tc';
const PERIOD_MS = 3_000;

const onClaim: Interpret = (o) => {
  if (o.kind === 'reply' && (o.status === 200 || o.status === 201)) {
    const d = dataOf(o);
    return { type: 'ok', result: { won: d.won as boolean, value: d.value as string, version: d.version as string } };
  }
  return undefined;
};

const onGet: Interpret = (o) => {
  if (o.kind === 'reply' && o.status === 200) {
    const d = dataOf(o);
    return { type: 'ok', result: { value: d.value as string, version: d.version as string } };
  }
  if (o.kind === 'reply' && o.status === 404 && o.body.error === 'key_not_found')
    return { type: 'fail', error: 'key_not_found' };
  return undefined;
};

export class ClaimWorkload implements Workload {
  readonly name = 'claim';
  private next = 0;

  async run(ctx: Context): Promise<void> {
    await runClients(ctx, this.name, ctx.options.concurrency, (c) => this.step(ctx, c));
  }

  private async step(ctx: Context, c: Client): Promise<void> {
    const key = rotatingKey(ctx, c.rnd, 'c', PERIOD_MS, 1);
    if (c.rnd.chance(0.25)) {
      await c.perform('get', key, null, `/api/v1/distributed-state/${CLAIM_NS}/${seg(key)}`, { method: 'GET' }, onGet);
      return;
    }
    const value = `v${this.next++}`;
    await c.perform(
      'claim',
      key,
      { value },
      `/api/v1/claims/${CLAIM_NS}/${seg(key)}`,
      { method: 'POST', body: { value } },
      onClaim,
    );
  }
}
