/**
 * `node-strong-*` sessions workload: many clients calling through the same
 * node outside the group (so every call is forwarded, and a lost answer is
 * retried while the other callers keep that node's sessions busy), now and
 * then a burst of concurrent sets issued in one turn. Every write carries a
 * tag of its own (its value, or its lock metadata) so the exactly-once
 * checker can match what each caller was told with what the state machine
 * executed for it.
 */

import { INDETERMINATE_CODES, type Outcome, type TaggedAnswer } from '@parley/check';
import { isParleyError, type PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { between } from '@parley/sim';
import type { NodeStrongHost } from './host.js';
import type { NodeStrongWorld, RunState } from './world.js';

/** The client gives up on a call it has heard nothing of after this long. */
const GIVE_UP_MS = 12_000;
const SET_KEYS = 6;
const CREATE_KEYS = 4;
const CLAIM_KEYS = 4;
const LOCK_KEYS = 2;
/** Concurrent sets of one burst (more than one session's window). */
const BURST = 40;
/** Codes a call may end with: state-machine answers, and the indeterminate ones. */
const EXPECTED = new Set([
  'key_already_exists',
  'version_mismatch',
  'key_not_found',
  'lock_held',
  'timeout',
  'unavailable',
  'not_leader',
  'closed',
  'outcome_unknown',
]);

export interface SessionsWorkloadConfig {
  clients: number;
  /** Chance (per op, in %) that a client issues a burst instead. */
  burstPercent: number;
}

interface Client {
  readonly name: string;
  busy: boolean;
  versions: Map<string, string>;
  locks: Map<string, number>;
}

export interface SessionsWorkload {
  readonly answers: TaggedAnswer[];
  readonly unexpected: string[];
  readonly stats: { calls: number; bursts: number; indeterminate: number; outcomeUnknown: number; gaveUp: number };
  /** Simulated ms each call took. */
  readonly callMs: number[];
}

export function startSessionsWorkload(
  sim: Simulation,
  config: SessionsWorkloadConfig,
  world: NodeStrongWorld,
  state: RunState,
): SessionsWorkload {
  const rng = sim.random;
  const { nodes, voters, app } = world;
  const outsiders = nodes.filter((n) => !voters.includes(n));
  const answers: TaggedAnswer[] = [];
  const unexpected: string[] = [];
  const stats = { calls: 0, bursts: 0, indeterminate: 0, outcomeUnknown: 0, gaveUp: 0 };
  const callMs: number[] = [];
  let tags = 0;
  const nextTag = () => `t${++tags}`;

  /** Mostly the node outside the group, else any live node. */
  function pickNode(): NodeStrongHost | undefined {
    const live = (ids: PeerId[]) => ids.filter((n) => sim.host(n).state === 'up' && app(n) !== undefined);
    const preferred = live(outsiders);
    const pool = preferred.length > 0 && rng.int(10) < 8 ? preferred : live(nodes);
    if (pool.length === 0) return undefined;
    return app(pool[rng.int(pool.length)] as PeerId);
  }

  /** Runs one tagged call and records what its caller was told. */
  function call<T>(
    c: Client,
    f: string,
    tag: string,
    run: () => Promise<T>,
    outcome: (r: T) => Outcome,
    after?: (r: T) => void,
  ): Promise<void> {
    stats.calls++;
    const startedAt = sim.nowMs();
    return new Promise((resolve) => {
      let open = true;
      const finish = (o: Outcome) => {
        if (!open) return;
        open = false;
        callMs.push(sim.nowMs() - startedAt);
        if (!o.ok && o.code === 'outcome_unknown') stats.outcomeUnknown++;
        if (!o.ok && !EXPECTED.has(o.code) && o.code !== 'gave-up' && unexpected.length < 10) {
          unexpected.push(`${c.name} ${f} ${tag}: ${o.code}`);
        }
        answers.push({ tag, client: c.name, f, outcome: o });
        resolve();
      };
      sim.schedule(GIVE_UP_MS, () => {
        if (!open) return;
        stats.gaveUp++;
        stats.indeterminate++;
        finish({ ok: false, code: 'gave-up' });
      });
      run().then(
        (r) => {
          finish(outcome(r));
          after?.(r);
        },
        (err: unknown) => {
          const code = isParleyError(err) ? err.code : `crash: ${String(err)}`;
          if (INDETERMINATE_CODES.has(code)) stats.indeterminate++;
          finish({ ok: false, code });
        },
      );
    });
  }

  function op(c: Client, node: NodeStrongHost): Promise<unknown> {
    const ns = node.module.strong('eo');
    const tag = nextTag();
    const roll = rng.int(100);
    if (roll < config.burstPercent) {
      stats.bursts++;
      const sets = Array.from({ length: BURST }, (_, i) => {
        const t = i === 0 ? tag : nextTag();
        return call(
          c,
          'set',
          t,
          () => ns.set(`b${i % SET_KEYS}`, t),
          (r) => ({ ok: true, version: r.entry.version }),
        );
      });
      return Promise.all(sets);
    }
    if (roll < 35) {
      const key = `k${rng.int(SET_KEYS)}`;
      return call(
        c,
        'set',
        tag,
        () => ns.set(key, tag),
        (r) => ({ ok: true, version: r.entry.version }),
        (r) => c.versions.set(key, r.entry.version),
      );
    }
    if (roll < 50) {
      const key = `k${rng.int(SET_KEYS)}`;
      const known = c.versions.get(key);
      if (known === undefined) return Promise.resolve();
      return call(
        c,
        'cas',
        tag,
        () => ns.set(key, tag, { ifVersion: known }),
        (r) => ({ ok: true, version: r.entry.version }),
        (r) => c.versions.set(key, r.entry.version),
      );
    }
    if (roll < 65) {
      const key = `o${rng.int(CREATE_KEYS)}`;
      return call(
        c,
        'create',
        tag,
        () => ns.set(key, tag, { ifNotExists: true, ttl: 1 }),
        (r) => ({ ok: true, version: r.entry.version }),
      );
    }
    if (roll < 85) {
      const key = `c${rng.int(CLAIM_KEYS)}`;
      return call(
        c,
        'claim',
        tag,
        () => ns.claim(key, tag, { ttl: 1 }),
        (r) => ({ ok: true, won: r.won, value: r.value, version: r.version }),
      );
    }
    const locks = node.module.locks('eo-locks');
    const key = `m${rng.int(LOCK_KEYS)}`;
    const fence = c.locks.get(key);
    if (fence !== undefined) {
      c.locks.delete(key);
      return locks.release(key, { owner: c.name, fence }).catch(() => {});
    }
    const wait = rng.int(3) === 0 ? 1 : 0;
    return call(
      c,
      'acquire',
      tag,
      () => locks.acquire(key, { owner: c.name, ttl: 1, wait, metadata: { tag } }),
      (g) => ({ ok: true, fence: g.fence }),
      (g) => c.locks.set(key, g.fence),
    );
  }

  function tick(c: Client): void {
    sim.schedule(between(rng, 5, 40), () => {
      if (!state.running) return;
      if (!c.busy) {
        const node = pickNode();
        if (node) {
          c.busy = true;
          op(c, node).finally(() => {
            c.busy = false;
          });
        }
      }
      tick(c);
    });
  }

  for (let i = 0; i < config.clients; i++) {
    tick({ name: `c${i}`, busy: false, versions: new Map(), locks: new Map() });
  }
  return { answers, unexpected, stats, callMs };
}
