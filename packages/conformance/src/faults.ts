/**
 * The fault workload: several clients, each through its own Parley node,
 * call strong operations on shared keys while a nemesis SIGKILLs etcd members
 * (the leader, a follower, sometimes two at once: no quorum) and restarts
 * them. Every call goes into a history (`ok`, `fail` with an observed code,
 * or `info` when its outcome is unknown) for Parley's checkers: the
 * `parley-entry` model for entries and claims, `parley-lock` for locks and
 * fenced writes, `parley-lease` for leases.
 */

import { HistoryRecorder, type HistoryValue } from '@parley/check';
import type { EtcdCluster } from '@parley/etcd';
import { isParleyError, SeededRandom } from '@parley/interface';
import type { Lease } from '@parley/node';
import type { StrongNode } from './backends.js';

export type FaultModel = 'entry' | 'lock' | 'lease';

/** Codes that say what the state was (a `fail` the models check); anything else is `info`. */
const OBSERVED: Record<FaultModel, ReadonlySet<string>> = {
  entry: new Set(['version_mismatch', 'key_already_exists', 'key_not_found']),
  lock: new Set(['lock_held', 'lease_lost', 'fence_stale']),
  lease: new Set(['lock_held', 'lease_lost', 'fence_stale']),
};
const ENTRY_KEYS = ['k0', 'k1'];
const CLAIM_KEYS = ['c0', 'c1', 'c2', 'c3'];
const LOCK_KEYS = ['m0'];
const LEASE_KEYS = ['l0'];
const NS = 'faults';
const LOCK_NS = 'faults-locks';
/** Longest a lock or lease is held in the workload (seconds); leases and locks outlive the run's faults. */
const HOLD_TTL_S = 30;

export interface FaultRunOptions {
  seed: number;
  /** How long clients call (and the nemesis kills), in ms. */
  durationMs: number;
  /**
   * After `durationMs`, clients go on calling (without new faults) until every model has
   * this many ok calls, for at most `durationMs` more: a loaded machine still yields a
   * history worth checking. Default 0.
   */
  minOkCalls?: number;
  /** One node per client. */
  nodes: StrongNode[];
  models: readonly FaultModel[];
  /** Members to kill and restart; none for a run without faults. */
  cluster?: EtcdCluster;
}

export interface FaultRunReport {
  histories: Record<FaultModel, HistoryRecorder>;
  calls: number;
  indeterminate: number;
  kills: number;
  /** How long each restart took until the cluster took writes again, in ms. */
  restartMs: number[];
  /** Unexpected error codes (neither observed nor unavailable/timeout), at most 10. */
  unexpected: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the clients (and the nemesis) for `durationMs`, then waits for every call to end. */
export async function runFaultWorkload(o: FaultRunOptions): Promise<FaultRunReport> {
  const rng = new SeededRandom(o.seed);
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const histories: Record<FaultModel, HistoryRecorder> = {
    entry: new HistoryRecorder({ nowMs: now, maxEvents: 200_000 }),
    lock: new HistoryRecorder({ nowMs: now, maxEvents: 200_000 }),
    lease: new HistoryRecorder({ nowMs: now, maxEvents: 200_000 }),
  };
  const report: FaultRunReport = { histories, calls: 0, indeterminate: 0, kills: 0, restartMs: [], unexpected: [] };
  let counter = 0;
  const end = now() + o.durationMs;
  const hardEnd = end + o.durationMs;
  const okCalls = (m: FaultModel) => histories[m].events().filter((e) => e.type === 'ok').length;
  const enough = () => o.models.every((m) => okCalls(m) >= (o.minOkCalls ?? 0));
  const calling = () => now() < end || (now() < hardEnd && !enough());

  /** One recorded call: ok with `okValue(result)`, an observed code as `fail`, else `info`. */
  async function call<T>(
    model: FaultModel,
    client: string,
    f: string,
    key: string,
    input: HistoryValue,
    run: () => Promise<T>,
    okValue: (r: T) => HistoryValue,
  ): Promise<{ ok: true; value: T } | { ok: false; code: string }> {
    const h = histories[model];
    h.invoke(client, f, input, key);
    report.calls++;
    try {
      const value = await run();
      h.ok(client, okValue(value));
      return { ok: true, value };
    } catch (err) {
      const code = isParleyError(err) ? err.code : 'crash';
      if (OBSERVED[model].has(code)) h.fail(client, null, { error: code });
      else {
        report.indeterminate++;
        h.info(client, null, { error: code });
        if (code !== 'unavailable' && code !== 'timeout' && report.unexpected.length < 10) {
          report.unexpected.push(`${client} ${f} ${key}: ${String(err)}`);
        }
      }
      return { ok: false, code };
    }
  }

  async function client(i: number, node: StrongNode): Promise<void> {
    const name = `c${i}`;
    const ns = node.strong(NS);
    const locks = node.locks(LOCK_NS);
    const versions = new Map<string, string[]>();
    const grants = new Map<string, number>();
    const leases = new Map<string, Lease>();
    const learn = (key: string, v: string) => {
      const list = versions.get(key) ?? [];
      list.push(v);
      versions.set(key, list.slice(-4));
    };
    while (calling()) {
      const model = o.models[rng.int(o.models.length)] as FaultModel;
      const value = ++counter;
      if (model === 'entry') {
        const key = ENTRY_KEYS[rng.int(ENTRY_KEYS.length)] as string;
        const known = versions.get(key) ?? [];
        // The newest version this client saw, or an older one (a stale CAS).
        const ifVersion = known.length === 0 ? undefined : (known[rng.int(3) === 0 ? 0 : known.length - 1] as string);
        const r = rng.int(10);
        if (r < 3) {
          const out = await call(
            'entry',
            name,
            'get',
            key,
            null,
            () => ns.get(key),
            (e) => (e === undefined ? null : { value: e.value as HistoryValue, version: e.version }),
          );
          if (out.ok && out.value) learn(key, out.value.version);
        } else if (r < 5 || ifVersion === undefined) {
          const out = await call(
            'entry',
            name,
            'set',
            key,
            { value },
            () => ns.set(key, value, { ttl: 600 }),
            (x) => ({ version: x.version }),
          );
          if (out.ok) learn(key, out.value.version);
        } else if (r < 8) {
          const out = await call(
            'entry',
            name,
            'set',
            key,
            { value, ifVersion },
            () => ns.set(key, value, { ttl: 600, ifVersion }),
            (x) => ({ version: x.version }),
          );
          if (out.ok) learn(key, out.value.version);
        } else if (r < 9) {
          const out = await call(
            'entry',
            name,
            'set',
            key,
            { value, ifNotExists: true },
            () => ns.set(key, value, { ttl: 600, ifNotExists: true }),
            (x) => ({ version: x.version }),
          );
          if (out.ok) learn(key, out.value.version);
        } else if (rng.int(2) === 0) {
          await call(
            'entry',
            name,
            'delete',
            key,
            null,
            () => ns.delete(key),
            (existed) => ({ existed }),
          );
        } else {
          const ckey = CLAIM_KEYS[rng.int(CLAIM_KEYS.length)] as string;
          await call(
            'entry',
            name,
            'claim',
            ckey,
            { value },
            () => ns.claim(ckey, value, { ttl: 600 }),
            (c): HistoryValue =>
              c.won
                ? { won: true, version: c.version }
                : { won: false, value: c.value as HistoryValue, version: c.version },
          );
        }
      } else if (model === 'lock') {
        const key = LOCK_KEYS[rng.int(LOCK_KEYS.length)] as string;
        const fence = grants.get(key);
        const r = rng.int(10);
        if (fence === undefined || r < 2) {
          const out = await call(
            'lock',
            name,
            'acquire',
            key,
            { owner: name },
            () => locks.acquire(key, { owner: name, ttl: HOLD_TTL_S }),
            (g) => ({ fence: g.fence }),
          );
          if (out.ok) grants.set(key, out.value.fence);
        } else if (r < 5) {
          await call(
            'lock',
            name,
            'write',
            key,
            { fence, value },
            () => ns.set(`by-${key}`, value, { ttl: 600, fence: { namespace: LOCK_NS, key, fence } }),
            () => null,
          );
        } else if (r < 7) {
          await call(
            'lock',
            name,
            'get',
            key,
            null,
            () => locks.inspect(key),
            (info) => (info.holder ? { owner: info.holder.owner, fence: info.holder.fence } : null),
          );
        } else {
          const out = await call(
            'lock',
            name,
            'release',
            key,
            { owner: name, fence },
            () => locks.release(key, { owner: name, fence }),
            (released) => ({ released }),
          );
          if (out.ok || (!out.ok && out.code !== 'unavailable' && out.code !== 'timeout')) grants.delete(key);
        }
      } else {
        const key = LEASE_KEYS[rng.int(LEASE_KEYS.length)] as string;
        const lease = leases.get(key);
        const r = rng.int(10);
        if (lease === undefined || r < 2) {
          const out = await call(
            'lease',
            name,
            'acquire',
            key,
            { holder: name },
            () => ns.lease(key, { ttl: HOLD_TTL_S, holder: name, state: value }),
            (l) => ({ epoch: l.epoch }),
          );
          if (out.ok) leases.set(key, out.value);
        } else if (r < 6) {
          await call(
            'lease',
            name,
            'write',
            key,
            { holder: name, epoch: lease.epoch, value },
            () => lease.updateState(value),
            () => null,
          );
        } else if (r < 8) {
          await call(
            'lease',
            name,
            'renew',
            key,
            { holder: name, epoch: lease.epoch },
            () => lease.renew(HOLD_TTL_S),
            () => null,
          );
        } else {
          const out = await call(
            'lease',
            name,
            'release',
            key,
            { holder: name, epoch: lease.epoch },
            () => lease.release(value),
            () => null,
          );
          if (out.ok || (!out.ok && out.code !== 'unavailable' && out.code !== 'timeout')) leases.delete(key);
        }
      }
    }
  }

  async function nemesis(cluster: EtcdCluster): Promise<void> {
    const n = cluster.members.length;
    while (now() < end - 1_500) {
      await sleep(800 + rng.int(700));
      const victims: number[] = [];
      const leader = await cluster.leaderIndex();
      const r = rng.int(4);
      if (r < 2 && leader >= 0) victims.push(leader);
      else victims.push(rng.int(n));
      // Sometimes a second member too: no quorum until one comes back.
      if (r === 3) victims.push(((victims[0] as number) + 1 + rng.int(n - 1)) % n);
      for (const v of victims) {
        await cluster.kill(v);
        report.kills++;
      }
      await sleep(500 + rng.int(700));
      const t = now();
      for (const v of victims) await cluster.restart(v);
      report.restartMs.push(Math.round(now() - t));
    }
  }

  await Promise.all([...o.nodes.map((n, i) => client(i, n)), ...(o.cluster ? [nemesis(o.cluster)] : [])]);
  return report;
}
