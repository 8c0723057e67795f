/**
 * `node-strong-*` workload: clients calling the public API (`strong(ns)`,
 * `locks(ns)`, leases) through any live node, each call recorded in the
 * entry, lease or lock history (ok, fail with an observed code, or
 * indeterminate `info`), and in the `-membership` variant leadership
 * transfers and a voter removed and re-added mid-workload.
 */

import {
  type AckedWrite,
  entryClaim,
  entryDelete,
  entryGet,
  entrySet,
  FailedAnswer,
  HistoryRecorder,
  leaseAcquire,
  leaseGet,
  leaseOwn,
  lockAcquire,
  lockInspect,
  lockRelease,
  lockRenew,
  lockWrite,
  type ParleyModelName,
  type ParleyOperation,
} from '@parley/check';
import { isParleyError, type PeerId } from '@parley/interface';
import type { Lease } from '@parley/node';
import type { Simulation } from '@parley/sim';
import { between } from '@parley/sim';
import { highestTermLeader } from '../raft/group.js';
import type { NodeStrongHost } from './host.js';
import { ENTRY_KEYS, type NodeStrongScenarioConfig, type NodeStrongWorld, type RunState } from './world.js';

/** The client gives up on a call it has heard nothing of after this long (its node crashed). */
const GIVE_UP_MS = 8_000;
const CLAIM_KEYS = ['c0', 'c1'];
const LEASE_KEYS = ['l0', 'l1'];
const LOCK_KEYS = ['m0', 'm1'];
/** Errors that leave a call's outcome unknown. */
const INDETERMINATE = new Set(['timeout', 'unavailable', 'not_leader', 'closed', 'outcome_unknown']);

export type ModelName = ParleyModelName;

interface Client {
  readonly name: string;
  busy: boolean;
  /** The history process of this client's pipelined lock releases (they overlap its next call). */
  releaser?: Client;
  versions: Map<string, string>;
  /** Lease handles work through the node that made them, while that node lives. */
  leases: Map<string, { lease: Lease; via: NodeStrongHost }>;
  locks: Map<string, number>;
}

function newClient(name: string): Client {
  return { name, busy: false, versions: new Map(), leases: new Map(), locks: new Map() };
}

/** The clients' histories and what their calls came to. */
export interface NodeStrongWorkload {
  readonly recorders: Record<ModelName, HistoryRecorder>;
  readonly unexpected: string[];
  readonly acked: AckedWrite[];
  readonly viaNode: Map<string, number>;
  readonly callMs: number[];
  /** Acquires the nodes sent again because they overtook their owner's pipelined release. */
  acquiresOvertaken(): number;
  readonly stats: {
    calls: number;
    indeterminate: number;
    gaveUp: number;
    transfers: number;
    membershipChanges: number;
    pipelinedReleases: number;
  };
}

/** Starts the clients (and the membership churn) on a booted world. */
export function startNodeStrongWorkload(
  sim: Simulation,
  config: NodeStrongScenarioConfig,
  world: NodeStrongWorld,
  state: RunState,
): NodeStrongWorkload {
  const rng = sim.random;
  const { voters, nodes, app, versionIndex } = world;

  // --- clients ------------------------------------------------------------------
  const recorders: Record<ModelName, HistoryRecorder> = {
    entry: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
    lease: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
    lock: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
  };
  const unexpected: string[] = [];
  const acked: AckedWrite[] = [];
  const stats = { calls: 0, indeterminate: 0, gaveUp: 0, transfers: 0, membershipChanges: 0, pipelinedReleases: 0 };
  const viaNode = new Map<string, number>();
  const callMs: number[] = [];

  /** A live node to call through: any of them, members or not. */
  function pickNode(): NodeStrongHost | undefined {
    const live = nodes.filter((n) => sim.host(n).state === 'up' && app(n) !== undefined);
    if (live.length === 0) return undefined;
    const id = live[rng.int(live.length)] as PeerId;
    const kind = voters.includes(id) ? 'voter' : 'outsider';
    viaNode.set(kind, (viaNode.get(kind) ?? 0) + 1);
    return app(id);
  }

  /**
   * One API call of client `c`, recorded in its model's history (the operation says how):
   * ok → the operation's value; an observed error code → fail; retryable or given up → info.
   */
  function record<T>(
    c: Client,
    key: string,
    op: ParleyOperation<NoInfer<T>>,
    run: () => Promise<T>,
    after?: (outcome: { ok: true; value: T } | { ok: false; code: string }) => void,
  ): void {
    const { f, observed } = op;
    const rec = recorders[op.model];
    rec.invoke(c.name, f, op.input, key);
    c.busy = true;
    stats.calls++;
    let open = true;
    const invokedAt = sim.nowMs();
    const finish = (fn: () => void) => {
      if (!open) return;
      open = false;
      c.busy = false;
      callMs.push(sim.nowMs() - invokedAt);
      fn();
    };
    sim.schedule(GIVE_UP_MS, () =>
      finish(() => {
        stats.gaveUp++;
        rec.info(c.name, null, { error: 'gave-up' });
      }),
    );
    run().then(
      (value) =>
        finish(() => {
          const v = op.okValue(value);
          if (v instanceof FailedAnswer) rec.fail(c.name, null, { error: v.code });
          else rec.ok(c.name, v);
          after?.({ ok: true, value });
        }),
      (err) =>
        finish(() => {
          const code = isParleyError(err) ? err.code : 'crash';
          if (observed[code] !== undefined) rec.fail(c.name, null, { error: observed[code] as string });
          else {
            stats.indeterminate++;
            rec.info(c.name, null, { error: code });
            if (!INDETERMINATE.has(code) && unexpected.length < 10)
              unexpected.push(`${c.name} ${f} ${key}: ${String(err)}`);
          }
          after?.({ ok: false, code });
        }),
    );
  }

  const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;
  let valueCounter = 0;

  function entryOp(c: Client, node: NodeStrongHost): void {
    const ns = node.module.strong('kv');
    const key = pick(ENTRY_KEYS);
    const value = ++valueCounter;
    const known = c.versions.get(key);
    const kind = rng.int(6);
    const ack = (o: { ok: true; value: { version: string } } | { ok: false; code: string }) => {
      if (!o.ok) return;
      const v = o.value.version;
      c.versions.set(key, v);
      const index = versionIndex.get(v);
      if (index !== undefined) acked.push({ key, version: v, index });
    };
    if (kind === 0) {
      record(
        c,
        key,
        entryGet(),
        () => ns.get(key),
        (o) => {
          if (o.ok && o.value) c.versions.set(key, o.value.version);
          else if (o.ok) c.versions.delete(key);
        },
      );
    } else if (kind === 1 || (kind === 2 && known === undefined)) {
      record(c, key, entrySet(value), () => ns.set(key, value), ack);
    } else if (kind === 2 && known !== undefined) {
      record(c, key, entrySet(value, { ifVersion: known }), () => ns.set(key, value, { ifVersion: known }), ack);
    } else if (kind === 3) {
      record(c, key, entrySet(value, { ifNotExists: true }), () => ns.set(key, value, { ifNotExists: true }), ack);
    } else if (kind === 4) {
      const useVersion = known !== undefined && rng.int(2) === 0;
      const options = useVersion ? { ifVersion: known } : {};
      record(c, key, entryDelete(options), () => ns.delete(key, options));
    } else {
      const ck = pick(CLAIM_KEYS);
      record(c, ck, entryClaim(value), () => ns.claim(ck, value));
    }
  }

  function leaseOp(c: Client, node: NodeStrongHost): void {
    const ns = node.module.strong('lease');
    const key = pick(LEASE_KEYS);
    const held = c.leases.get(key);
    if (held && app(held.via.ctx.id) !== held.via) c.leases.delete(key); // its node crashed: forget the handle
    const lease = c.leases.get(key)?.lease;
    const holder = c.name;
    const kind = lease === undefined ? (rng.int(4) === 0 ? 4 : 0) : rng.int(5);
    const lost = (o: { ok: boolean; code?: string }) => {
      if (!o.ok && o.code === 'lease_lost') c.leases.delete(key);
    };
    if (kind === 0) {
      const ttl = 1 + rng.int(3);
      record(
        c,
        key,
        leaseAcquire(holder),
        () => ns.lease(key, { ttl, holder, state: { by: holder } }),
        (o) => {
          if (o.ok) c.leases.set(key, { lease: o.value, via: node });
        },
      );
    } else if (kind === 1 && lease) {
      record(c, key, leaseOwn('renew', holder, lease.epoch), () => lease.renew(1 + rng.int(3)), lost);
    } else if (kind === 2 && lease) {
      record(c, key, leaseOwn('write', holder, lease.epoch), () => lease.updateState({ n: ++valueCounter }), lost);
    } else if (kind === 3 && lease) {
      record(
        c,
        key,
        leaseOwn('release', holder, lease.epoch),
        () => lease.release(),
        (o) => {
          if (o.ok || o.code === 'lease_lost') c.leases.delete(key);
        },
      );
    } else {
      record(c, key, leaseGet(), () => ns.get(key));
    }
  }

  function lockOp(c: Client, node: NodeStrongHost): void {
    const locks = node.module.locks('lock');
    const key = pick(LOCK_KEYS);
    const fence = c.locks.get(key);
    const owner = c.name;
    const drawn = fence === undefined ? (rng.int(5) === 0 ? 4 : 0) : rng.int(5);
    // With pipelined releases a holder releases twice as often (a release, then the acquire behind it).
    const kind = config.pipelinedReleases && fence !== undefined && drawn === 3 ? 4 : drawn;
    const forget = (o: { ok: boolean }) => {
      if (!o.ok) c.locks.delete(key);
    };
    if (kind === 0) {
      const wait = rng.int(4) === 0 ? 1 : 0;
      record(
        c,
        key,
        lockAcquire(owner),
        () => locks.acquire(key, { owner, ttl: 1 + rng.int(3), wait }),
        (o) => {
          if (o.ok) c.locks.set(key, o.value.fence);
        },
      );
    } else if (kind === 1 && fence !== undefined) {
      record(c, key, lockRenew(owner, fence), () => locks.renew(key, { owner, fence, ttl: 1 + rng.int(3) }), forget);
    } else if ((kind === 2 || kind === 3) && fence !== undefined) {
      const value = ++valueCounter;
      record(
        c,
        key,
        lockWrite(fence),
        () => node.module.strong('fenced').set(key, value, { fence: { namespace: 'lock', key, fence } }),
        forget,
      );
    } else if (kind === 4 && fence !== undefined && config.pipelinedReleases && !c.releaser?.busy && rng.int(2) === 0) {
      pipelinedCycle(c, node, key, fence);
    } else if (kind === 4 && fence !== undefined) {
      record(
        c,
        key,
        lockRelease(owner, fence),
        () => locks.release(key, { owner, fence }),
        () => c.locks.delete(key),
      );
    } else {
      record(c, key, lockInspect(), () => locks.inspect(key));
    }
  }

  /**
   * A pipelined release of (key, fence), recorded under the client's releaser
   * process, and the owner's next acquire of the lock sent right behind it
   * through the same node. That acquire must never be refused as held by its
   * own owner once the release has applied (the node sends an acquire that
   * overtook its release again), nor be answered with the released grant
   * (the lock model and the fencing check).
   */
  const pipeliners = new Set<{ readonly overtaken: number }>();

  function pipelinedCycle(c: Client, node: NodeStrongHost, key: string, fence: number): void {
    const locks = node.module.locks('lock');
    const owner = c.name;
    // Every module a pipelined release went through, crashed ones too (their counts stay).
    pipeliners.add(node.module.pipelinedReleases);
    c.releaser ??= newClient(`${c.name}-release`);
    c.locks.delete(key);
    stats.pipelinedReleases++;
    let release: Promise<boolean> | undefined;
    record(c.releaser, key, lockRelease(owner, fence), () => {
      release = locks.release(key, { owner, fence, pipelined: true });
      return release;
    });
    const wait = rng.int(4) === 0 ? 1 : 0;
    record(
      c,
      key,
      lockAcquire(owner),
      () =>
        locks.acquire(key, { owner, ttl: 1 + rng.int(3), wait }).catch((err: unknown) => {
          if (isParleyError(err, 'lock_held') && err.details.owner === owner) {
            release?.then(
              (released) => {
                if (released && unexpected.length < 10) {
                  unexpected.push(
                    `${owner} acquire ${key}: refused as held by itself after its pipelined release applied`,
                  );
                }
              },
              () => {},
            );
          }
          throw err;
        }),
      (o) => {
        if (o.ok) c.locks.set(key, o.value.fence);
      },
    );
  }

  function tick(c: Client): void {
    sim.schedule(between(rng, 30, 150), () => {
      if (!state.running) return;
      if (!c.busy) {
        const node = pickNode();
        if (node) {
          // With pipelined releases, lock calls take 70% (the other scenarios' draws are unchanged).
          const [entryBelow, leaseBelow] = config.pipelinedReleases ? [15, 30] : [40, 70];
          const roll = rng.int(100);
          if (roll < entryBelow) entryOp(c, node);
          else if (roll < leaseBelow) leaseOp(c, node);
          else lockOp(c, node);
        }
      }
      tick(c);
    });
  }

  const clients: Client[] = Array.from({ length: config.clients }, (_, i) => newClient(`c${i}`));
  for (const c of clients) tick(c);

  // --- membership changes and leadership transfers mid-workload ----------------------
  if (config.membership) {
    const churn = () => {
      if (!state.running) return;
      const node = pickNode();
      const leader = highestTermLeader(voters, app);
      if (node && leader) {
        const st = leader.driver.status();
        const roll = rng.int(3);
        const target = pick(voters.filter((v) => v !== leader.ctx.id));
        if (roll === 0) {
          node.module.cluster.transferLeadership(target).then(
            () => stats.transfers++,
            () => {},
          );
        } else if (roll === 1 && st.voters.length === voters.length) {
          node.module.cluster.removeVoter(target).then(
            () => stats.membershipChanges++,
            () => {},
          );
        } else {
          const missing = voters.find((v) => !st.voters.includes(v));
          if (missing) {
            node.module.cluster.addVoter(missing).then(
              () => stats.membershipChanges++,
              () => {},
            );
          }
        }
      }
      sim.schedule(between(rng, 800, 2_000), churn);
    };
    sim.schedule(1_000, churn);
  }

  const acquiresOvertaken = () => [...pipeliners].reduce((n, p) => n + p.overtaken, 0);
  return { recorders, unexpected, acked, viaNode, callMs, stats, acquiresOvertaken };
}
