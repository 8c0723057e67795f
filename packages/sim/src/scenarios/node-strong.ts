/**
 * `node-strong-*`: the real node's strong module (./node-strong-host.ts) on
 * 3 or 5 voters plus 2 non-member nodes, with clients calling the public API
 * (`strong(ns)`, `locks(ns)`, leases) through any live node. A node that does
 * not lead forwards each call to the leader over the lossy simulated network
 * and retries (lost requests, lost answers, leader changes) with the same
 * session command, until the call's deadline; a call that fails with a
 * retryable code or is given up is indeterminate (`info`).
 *
 * Faults: partitions over all nodes (so non-members and their clients are cut
 * off too), crashes with restart from disk (torn tails) and pauses of voters,
 * clock skew with drift and jumps, and in the `-membership` variant
 * leadership transfers and a voter removed and added back mid-workload.
 *
 * Checked after every event: Raft's safety invariants, no driver stopped,
 * every member computes the same result at the same log index. After healing:
 * byte-identical coord snapshots at equal applied indexes; linearizability of
 * reads and writes under the parley-entry, parley-lease and parley-lock
 * models (an `unknown` verdict fails the run); fencing over the applied
 * command stream; durability of every acknowledged write on every voter's
 * disk after a crash and restart of all of them.
 */
import { type ApplyOutput, type Command, CoordStateMachine, canonicalJson, decodeCommand } from '@parley/coord';
import { isParleyError, type PeerId } from '@parley/interface';
import type { Lease } from '@parley/node/api';
import { type AckedWrite, checkDurability } from '../check/durability.js';
import { checkFencing, type FenceEvent } from '../check/fencing.js';
import { HistoryRecorder, type HistoryValue } from '../check/history.js';
import { InvariantRegistry } from '../check/invariants.js';
import { checkLinearizability, formatCounterexample } from '../check/linearizability.js';
import type { Model } from '../check/model.js';
import { parleyEntryModel, parleyLeaseModel, parleyLockModel } from '../check/parley-models.js';
import { type RaftClusterView, registerRaftInvariants } from '../check/raft-invariants.js';
import { between } from '../kernel.js';
import { Nemesis, type NemesisOptions, PARTITION_KINDS } from '../nemesis.js';
import { registerScenario, type Scenario, type ScenarioRun } from '../scenario.js';
import { type Simulation, violation } from '../simulation.js';
import { NodeStrongHost } from './node-strong-host.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from './raft-group.js';

export interface NodeStrongScenarioConfig {
  name: string;
  description: string;
  voters: 3 | 5;
  /** Nodes outside the Raft group that clients also call through. */
  nonMembers: number;
  clients: number;
  network?: {
    lossRate?: number;
    duplicateRate?: number;
    reorder?: boolean;
    latency?: { minMs: number; meanMs: number; maxMs: number };
  };
  /** Faults on every node (partitions, clogs). */
  netNemesis: NemesisOptions;
  /** Faults on voters only (crashes, pauses, clock jumps). */
  voterNemesis: NemesisOptions;
  skewMs: number;
  driftPpm?: number;
  disk?: { tornWriteRate?: number };
  snapshotEveryEntries?: number;
  keepEntries?: number;
  /** Leadership transfers and a voter removed and re-added during the workload. */
  membership?: boolean;
  safetyMs?: number;
  livenessBoundMs?: number;
}

const TICK_MS = 100;
/** A node's bound on one call (forwarding and retries included). */
const CALL_TIMEOUT_MS = 3_000;
/** The client gives up on a call it has heard nothing of after this long (its node crashed). */
const GIVE_UP_MS = 8_000;
const VERSION_KEY = 'sim-node';
const ENTRY_KEYS = ['k0', 'k1'];
const CLAIM_KEYS = ['c0', 'c1'];
const LEASE_KEYS = ['l0', 'l1'];
const LOCK_KEYS = ['m0', 'm1'];
/** Errors that leave a call's outcome unknown. */
const INDETERMINATE = new Set(['timeout', 'unavailable', 'not_leader', 'closed']);

type ModelName = 'entry' | 'lease' | 'lock';

/** An answer the model reads as a failure with this code (an absent key from `get`, `delete` of nothing). */
class Failed {
  constructor(readonly code: string) {}
}

interface Client {
  readonly name: string;
  busy: boolean;
  versions: Map<string, string>;
  /** Lease handles work through the node that made them, while that node lives. */
  leases: Map<string, { lease: Lease; via: NodeStrongHost }>;
  locks: Map<string, number>;
}

export function nodeStrongScenario(config: NodeStrongScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? 6_000,
    livenessBoundMs: config.livenessBoundMs ?? 20_000,
    setup: (sim) => setupNodeStrong(sim, config),
  };
}

function setupNodeStrong(sim: Simulation, config: NodeStrongScenarioConfig): ScenarioRun {
  const rng = sim.random;
  const voters: PeerId[] = Array.from({ length: config.voters }, (_, i) => `n${i + 1}`);
  const outsiders: PeerId[] = Array.from({ length: config.nonMembers }, (_, i) => `x${i + 1}`);
  const nodes = [...voters, ...outsiders];
  let running = true;

  const driftPpm = config.driftPpm ?? 0;
  const offsets = nodes.map(() => between(rng, -config.skewMs, config.skewMs));
  const drifts = nodes.map(() => between(rng, -driftPpm, driftPpm));

  // --- what the members did ----------------------------------------------------
  const outputAt = new Map<number, string>();
  const firstApply = new Map<string, number>();
  const fenceEvents: FenceEvent[] = [];
  const seen = new Set<string>();
  const writesAt = new Map<number, { key: string; version: string; who: string }>();
  const versionIndex = new Map<string, number>();
  const deletesAt = new Map<string, number[]>();
  const agreement: string[] = [];
  let applied = 0;
  let snapshotsInstalled = 0;

  const app = (id: PeerId): NodeStrongHost | undefined => {
    const h = sim.host<NodeStrongHost>(id);
    return h.state === 'down' ? undefined : h.app;
  };
  const member = (id: PeerId) => app(id)?.module.replica;

  const onFirstApply = (index: number, command: Command, out: ApplyOutput) => {
    const who = command.clientId === undefined ? undefined : `${command.clientId}/${command.seq}`;
    if (who !== undefined && !firstApply.has(who)) firstApply.set(who, index);
    const op = command.op;
    const r = out.result;
    const grant = (resource: string, fence: number, id: string) => {
      if (seen.has(id)) return; // a retried command answered from the session table
      seen.add(id);
      fenceEvents.push({ type: 'grant', resource, fence });
    };
    if (op.type === 'lock_acquire' && r.ok && r.value.type === 'lock' && who) {
      grant(`lock:${op.key}`, r.value.lock.fence, who);
    }
    for (const d of out.deliveries) {
      if (d.result.ok && d.result.value.type === 'lock') {
        grant(`lock:${d.result.value.lock.key}`, d.result.value.lock.fence, `${d.clientId}/${d.seq}`);
      }
    }
    if (op.type === 'lease_acquire' && r.ok && r.value.type === 'lease' && who) {
      grant(`lease:${op.key}`, r.value.lease.epoch, who);
    }
    if (op.type === 'lease_write' && who && !seen.has(`w${who}`)) {
      seen.add(`w${who}`);
      fenceEvents.push({ type: 'write', resource: `lease:${op.key}`, fence: op.epoch, accepted: r.ok });
    }
    if (op.type === 'set' && op.fence && who && !seen.has(`w${who}`)) {
      seen.add(`w${who}`);
      fenceEvents.push({ type: 'write', resource: `lock:${op.fence.key}`, fence: op.fence.token, accepted: r.ok });
    }
    if (op.type === 'delete' && op.namespace === 'kv' && r.ok && who && firstApply.get(who) === index) {
      let list = deletesAt.get(op.key);
      if (list === undefined) deletesAt.set(op.key, (list = []));
      list.push(index);
    }
    if (op.type === 'set' && op.namespace === 'kv' && r.ok && r.value.type === 'entry' && who) {
      const v = r.value.entry.version;
      if (!versionIndex.has(v)) {
        versionIndex.set(v, index);
        writesAt.set(index, { key: op.key, version: v, who });
      }
    }
  };

  const onApply = (host: PeerId, index: number, _term: number, command: Command | undefined, out: ApplyOutput) => {
    const text = canonicalJson(out);
    const prior = outputAt.get(index);
    if (prior === undefined) {
      outputAt.set(index, text);
      applied++;
      if (command) onFirstApply(index, command, out);
    } else if (prior !== text && agreement.length < 10) {
      agreement.push(`${host} computed a different result at index ${index}: ${text} vs ${prior}`);
    }
  };

  for (const [i, id] of nodes.entries()) {
    sim.addHost(
      id,
      (ctx) =>
        NodeStrongHost.boot(ctx, {
          strong: {
            voters,
            tickMs: TICK_MS,
            electionTimeoutTicks: 10,
            versionKey: VERSION_KEY,
            callTimeoutMs: CALL_TIMEOUT_MS,
            attemptTimeoutMs: 1_000,
            snapshotEveryEntries: config.snapshotEveryEntries ?? 40,
            keepEntries: config.keepEntries ?? 5,
            maxSnapshotChunkBytes: 4096,
          },
          onApply,
          onRestore: () => {
            if (running) snapshotsInstalled++;
          },
        }),
      {
        disk: voters.includes(id) ? config.disk : undefined,
        clock: { offsetMs: offsets[i] as number, driftPpm: drifts[i] as number },
      },
    );
  }

  // --- clients ------------------------------------------------------------------
  const recorders: Record<ModelName, HistoryRecorder> = {
    entry: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
    lease: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
    lock: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
  };
  const unexpected: string[] = [];
  const acked: AckedWrite[] = [];
  let calls = 0;
  let indeterminate = 0;
  let gaveUp = 0;
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
   * One API call of client `c` through `node`, recorded in the `model` history:
   * ok → okValue; an observed error code → fail; retryable or given up → info.
   */
  function record<T>(
    model: ModelName,
    c: Client,
    f: string,
    key: string,
    input: HistoryValue,
    run: () => Promise<T>,
    okValue: (r: T) => HistoryValue | Failed,
    observed: Record<string, string>,
    after?: (outcome: { ok: true; value: T } | { ok: false; code: string }) => void,
  ): void {
    const rec = recorders[model];
    rec.invoke(c.name, f, input, key);
    c.busy = true;
    calls++;
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
        gaveUp++;
        rec.info(c.name, null, { error: 'gave-up' });
      }),
    );
    run().then(
      (value) =>
        finish(() => {
          const v = okValue(value);
          if (v instanceof Failed) rec.fail(c.name, null, { error: v.code });
          else rec.ok(c.name, v);
          after?.({ ok: true, value });
        }),
      (err) =>
        finish(() => {
          const code = isParleyError(err) ? err.code : 'crash';
          if (observed[code] !== undefined) rec.fail(c.name, null, { error: observed[code] as string });
          else {
            indeterminate++;
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
    const ack = (o: { ok: true; value: { entry: { version: string } } } | { ok: false; code: string }) => {
      if (!o.ok) return;
      const v = o.value.entry.version;
      c.versions.set(key, v);
      const index = versionIndex.get(v);
      if (index !== undefined) acked.push({ key, version: v, index });
    };
    if (kind === 0) {
      record(
        'entry',
        c,
        'get',
        key,
        null,
        () => ns.get(key),
        (e) => (e === undefined ? new Failed('key_not_found') : { value: e.value as HistoryValue, version: e.version }),
        {},
        (o) => {
          if (o.ok && o.value) c.versions.set(key, o.value.version);
          else if (o.ok) c.versions.delete(key);
        },
      );
    } else if (kind === 1 || (kind === 2 && known === undefined)) {
      record(
        'entry',
        c,
        'set',
        key,
        { value },
        () => ns.set(key, value),
        (r) => ({ version: r.entry.version }),
        {},
        ack,
      );
    } else if (kind === 2 && known !== undefined) {
      record(
        'entry',
        c,
        'set',
        key,
        { value, ifVersion: known },
        () => ns.set(key, value, { ifVersion: known }),
        (r) => ({ version: r.entry.version }),
        { version_mismatch: 'version_mismatch', key_not_found: 'version_mismatch' },
        ack,
      );
    } else if (kind === 3) {
      record(
        'entry',
        c,
        'set',
        key,
        { value, ifNotExists: true },
        () => ns.set(key, value, { ifNotExists: true }),
        (r) => ({ version: r.entry.version }),
        { key_already_exists: 'key_already_exists' },
        ack,
      );
    } else if (kind === 4) {
      const useVersion = known !== undefined && rng.int(2) === 0;
      record(
        'entry',
        c,
        'delete',
        key,
        useVersion ? { ifVersion: known } : null,
        () => ns.delete(key, useVersion ? { ifVersion: known } : {}),
        (existed) => (existed ? { existed: true } : new Failed('key_not_found')),
        { key_not_found: 'key_not_found', version_mismatch: 'version_mismatch' },
      );
    } else {
      const ck = pick(CLAIM_KEYS);
      record(
        'entry',
        c,
        'claim',
        ck,
        { value },
        () => ns.claim(ck, value),
        (r): HistoryValue =>
          r.won
            ? { won: true, version: r.version }
            : { won: false, value: r.value as HistoryValue, version: r.version },
        {},
      );
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
        'lease',
        c,
        'acquire',
        key,
        { holder },
        () => ns.lease(key, { ttl, holder, state: { by: holder } }),
        (l) => ({ epoch: l.epoch }),
        { lock_held: 'lock_held' },
        (o) => {
          if (o.ok) c.leases.set(key, { lease: o.value, via: node });
        },
      );
    } else if (kind === 1 && lease) {
      record(
        'lease',
        c,
        'renew',
        key,
        { holder, epoch: lease.epoch },
        () => lease.renew(1 + rng.int(3)),
        () => ({}),
        { lease_lost: 'lease_lost' },
        lost,
      );
    } else if (kind === 2 && lease) {
      record(
        'lease',
        c,
        'write',
        key,
        { holder, epoch: lease.epoch },
        () => lease.updateState({ n: ++valueCounter }),
        () => ({}),
        { lease_lost: 'lease_lost' },
        lost,
      );
    } else if (kind === 3 && lease) {
      record(
        'lease',
        c,
        'release',
        key,
        { holder, epoch: lease.epoch },
        () => lease.release(),
        () => ({}),
        { lease_lost: 'lease_lost' },
        (o) => {
          if (o.ok || o.code === 'lease_lost') c.leases.delete(key);
        },
      );
    } else {
      record(
        'lease',
        c,
        'get',
        key,
        null,
        () => ns.get(key),
        (e): HistoryValue => {
          if (e === undefined) return null;
          const doc = e.value as { holder: string | null; epoch: number };
          return doc.holder === null ? { holder: null } : { holder: doc.holder, epoch: doc.epoch };
        },
        {},
      );
    }
  }

  function lockOp(c: Client, node: NodeStrongHost): void {
    const locks = node.module.locks('lock');
    const key = pick(LOCK_KEYS);
    const fence = c.locks.get(key);
    const owner = c.name;
    const kind = fence === undefined ? (rng.int(5) === 0 ? 4 : 0) : rng.int(5);
    const forget = (o: { ok: boolean }) => {
      if (!o.ok) c.locks.delete(key);
    };
    if (kind === 0) {
      const wait = rng.int(4) === 0 ? 1 : 0;
      record(
        'lock',
        c,
        'acquire',
        key,
        { owner },
        () => locks.acquire(key, { owner, ttl: 1 + rng.int(3), wait }),
        (g) => ({ fence: g.fence }),
        { lock_held: 'lock_held' },
        (o) => {
          if (o.ok) c.locks.set(key, o.value.fence);
        },
      );
    } else if (kind === 1 && fence !== undefined) {
      record(
        'lock',
        c,
        'renew',
        key,
        { owner, fence },
        () => locks.renew(key, { owner, fence, ttl: 1 + rng.int(3) }),
        () => ({}),
        // An expired, not re-granted lock renews as key_not_found: the grant is over.
        { fence_stale: 'fence_stale', key_not_found: 'lease_lost' },
        forget,
      );
    } else if ((kind === 2 || kind === 3) && fence !== undefined) {
      const value = ++valueCounter;
      record(
        'lock',
        c,
        'write',
        key,
        { fence },
        () => node.module.strong('fenced').set(key, value, { fence: { namespace: 'lock', key, fence } }),
        () => ({}),
        { fence_stale: 'fence_stale' },
        forget,
      );
    } else if (kind === 4 && fence !== undefined) {
      record(
        'lock',
        c,
        'release',
        key,
        { owner, fence },
        () => locks.release(key, { owner, fence }),
        (released) => ({ released }),
        {},
        () => c.locks.delete(key),
      );
    } else {
      record(
        'lock',
        c,
        'get',
        key,
        null,
        () => locks.inspect(key),
        (info) => (info.holder === null ? null : { owner: info.holder.owner, fence: info.holder.fence }),
        {},
      );
    }
  }

  function tick(c: Client): void {
    sim.schedule(between(rng, 30, 150), () => {
      if (!running) return;
      if (!c.busy) {
        const node = pickNode();
        if (node) {
          const roll = rng.int(100);
          if (roll < 40) entryOp(c, node);
          else if (roll < 70) leaseOp(c, node);
          else lockOp(c, node);
        }
      }
      tick(c);
    });
  }

  const clients: Client[] = Array.from({ length: config.clients }, (_, i) => ({
    name: `c${i}`,
    busy: false,
    versions: new Map(),
    leases: new Map(),
    locks: new Map(),
  }));
  for (const c of clients) tick(c);

  // --- membership changes and leadership transfers mid-workload ----------------------
  let transfers = 0;
  let membershipChanges = 0;
  if (config.membership) {
    const churn = () => {
      if (!running) return;
      const node = pickNode();
      const leader = highestTermLeader(voters, app);
      if (node && leader) {
        const st = leader.driver.status();
        const roll = rng.int(3);
        const target = pick(voters.filter((v) => v !== leader.ctx.id));
        if (roll === 0) {
          node.module.cluster.transferLeadership(target).then(
            () => transfers++,
            () => {},
          );
        } else if (roll === 1 && st.voters.length === voters.length) {
          node.module.cluster.removeVoter(target).then(
            () => membershipChanges++,
            () => {},
          );
        } else {
          const missing = voters.find((v) => !st.voters.includes(v));
          if (missing) {
            node.module.cluster.addVoter(missing).then(
              () => membershipChanges++,
              () => {},
            );
          }
        }
      }
      sim.schedule(between(rng, 800, 2_000), churn);
    };
    sim.schedule(1_000, churn);
  }

  // --- continuous invariants ----------------------------------------------------------
  sim.invariant('node-strong', () => {
    for (const id of nodes) {
      const a = app(id);
      if (a?.fatal !== undefined) throw violation('node-strong/driver-healthy', `${id}: ${String(a.fatal)}`);
    }
    if (agreement.length > 0) throw violation('node-strong/replica-agreement', agreement.join('; '));
  });
  const raftInvariants = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(raftInvariants);
  sim.invariant('raft', () => raftInvariants.assertInvariants(raftClusterView(voters, app)));

  const netNemesis = new Nemesis(sim, nodes, config.netNemesis).start();
  const voterNemesis = new Nemesis(sim, voters, config.voterNemesis).start();
  if (config.network) sim.network.configure(config.network);

  let readding = false;
  let linUnknown = 0;
  let linOps = 0;
  let durabilityChecked = 0;
  const unknownChecks: string[] = [];
  const linearizable = (model: Model<unknown, unknown, unknown>, name: ModelName) => {
    const r = checkLinearizability(model, recorders[name].events(), { maxSteps: 5_000_000 });
    if (r.verdict === 'not linearizable') {
      throw violation(
        `node-strong/linearizable-${name}`,
        r.counterexample ? formatCounterexample(r.counterexample) : 'not linearizable',
      );
    }
    if (r.verdict === 'unknown') {
      linUnknown++;
      unknownChecks.push(`linearizability of the ${name} history: unknown (step budget)`);
    }
    linOps += r.operations;
  };

  return {
    quiesce() {
      running = false;
      netNemesis.stop();
      voterNemesis.stop();
    },
    converged() {
      // Every voter back in the group (a removal mid-run is undone by the liveness phase below).
      const l = highestTermLeader(voters, app);
      if (l === undefined) return false;
      const st = l.driver.status();
      if (st.voters.length !== voters.length) {
        const missing = voters.find((v) => !st.voters.includes(v));
        if (missing && !readding) {
          readding = true;
          l.module.cluster.addVoter(missing).finally(() => {
            readding = false;
          });
        }
        return false;
      }
      return raftGroupConverged(l, voters, app);
    },
    async check() {
      if (unexpected.length > 0) throw violation('node-strong/unexpected-error', unexpected.join('; '));
      const snaps = voters.map((id) => {
        const r = member(id);
        if (!r) throw violation('node-strong/snapshot-agreement', `${id} is down after healing`);
        return { id, index: r.driver.appliedIndex, bytes: Buffer.from(r.sm.snapshot()).toString('base64') };
      });
      const ref = snaps[0] as (typeof snaps)[number];
      for (const s of snaps) {
        if (s.index === ref.index && s.bytes !== ref.bytes) {
          throw violation('node-strong/snapshot-agreement', `${s.id} and ${ref.id} differ at applied index ${s.index}`);
        }
      }
      linearizable(parleyEntryModel as Model<unknown, unknown, unknown>, 'entry');
      linearizable(parleyLeaseModel as Model<unknown, unknown, unknown>, 'lease');
      linearizable(parleyLockModel as Model<unknown, unknown, unknown>, 'lock');
      const fencing = checkFencing(fenceEvents);
      if (!fencing.ok) throw violation('node-strong/fencing', JSON.stringify(fencing.violations.slice(0, 3)));

      // Durability: crash every voter, restart it from its disk, and read what it recovered.
      for (const id of voters) sim.host(id).crash();
      for (const id of voters) sim.host(id).restart();
      await sim.runUntil(() => voters.every((id) => app(id) !== undefined), 1_000);
      for (const id of voters) {
        const a = app(id);
        if (!a) throw violation('node-strong/durability', `${id} did not boot from its disk`);
        const storage = a.nodeCtx.storage.raftLog;
        const snap = storage.snapshot();
        const snapshotIndex = snap.meta.index;
        const snapshot = new Map<string, { version: string | null; index: number }>();
        if (snap.data.byteLength > 0) {
          const sm = new CoordStateMachine({ versionKey: VERSION_KEY });
          sm.restore(snap.data);
          for (const key of ENTRY_KEYS) {
            const got = sm.query({ type: 'get', namespace: 'kv', key }, sm.timeMs);
            if (got.ok && got.value.type === 'got') {
              const v = got.value.entry.version;
              snapshot.set(key, { version: v, index: versionIndex.get(v) ?? -1 });
            } else {
              let at = 0;
              for (const idx of deletesAt.get(key) ?? []) if (idx <= snapshotIndex) at = Math.max(at, idx);
              if (at > 0) snapshot.set(key, { version: null, index: at });
            }
          }
        }
        const entries = new Map<number, { key: string; version: string }>();
        const last = storage.lastIndex();
        const first = Math.max(snapshotIndex + 1, storage.firstIndex());
        for (const e of first <= last ? storage.entries(first, last + 1) : []) {
          const w = writesAt.get(e.index);
          if (!w || e.type !== 'normal' || e.data.byteLength === 0) continue;
          const cmd = decodeCommand(e.data);
          if (`${cmd.clientId}/${cmd.seq}` === w.who) entries.set(e.index, { key: w.key, version: w.version });
        }
        const d = checkDurability(acked, { snapshotIndex, snapshot, entries });
        if (!d.ok) throw violation('node-strong/durability', `${id}: ${JSON.stringify(d.violations.slice(0, 3))}`);
        durabilityChecked += acked.length;
      }
    },
    inconclusive: () => unknownChecks.slice(),
    metrics() {
      return {
        voters: config.voters,
        nonMembers: config.nonMembers,
        calls,
        callsViaVoters: viaNode.get('voter') ?? 0,
        callsViaOutsiders: viaNode.get('outsider') ?? 0,
        indeterminate,
        gaveUp,
        callMsP50: percentile(callMs, 0.5),
        callMsP99: percentile(callMs, 0.99),
        applied,
        historyEvents: recorders.entry.size + recorders.lease.size + recorders.lock.size,
        linearizabilityOps: linOps,
        linearizabilityUnknown: linUnknown,
        fenceEvents: fenceEvents.length,
        ackedWrites: acked.length,
        durabilityChecked,
        snapshotsInstalled,
        transfers,
        membershipChanges,
        partitions: netNemesis.stats.partitions,
        crashes: voterNemesis.stats.crashes,
        pauses: voterNemesis.stats.pauses,
        clockJumps: voterNemesis.stats.clockJumps,
      };
    },
  };
}

function percentile(xs: number[], q: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

const LOSSY = { lossRate: 0.1, duplicateRate: 0.05, reorder: true, latency: { minMs: 1, meanMs: 8, maxMs: 120 } };

export const NODE_STRONG_SCENARIOS: readonly Scenario[] = [
  nodeStrongScenario({
    name: 'node-strong-3-partition',
    description:
      '3 voters + 2 non-member nodes, 6 clients calling through any node; partitions of every kind over all nodes, 2% loss with reordering; clocks ±100 ms.',
    voters: 3,
    nonMembers: 2,
    clients: 6,
    network: { lossRate: 0.02, reorder: true },
    netNemesis: { partitions: PARTITION_KINDS },
    voterNemesis: {},
    skewMs: 100,
  }),
  nodeStrongScenario({
    name: 'node-strong-3-crash',
    description:
      '3 voters + 2 non-members, 6 clients; voter crashes losing unsynced writes (torn tails), restart from disk; pauses; 5% loss and duplicates.',
    voters: 3,
    nonMembers: 2,
    clients: 6,
    network: { lossRate: 0.05, duplicateRate: 0.02 },
    netNemesis: {},
    voterNemesis: { crashes: true, pauses: true, maxDown: 1 },
    disk: { tornWriteRate: 0.5 },
    skewMs: 100,
  }),
  nodeStrongScenario({
    name: 'node-strong-5-chaos',
    description:
      '5 voters + 2 non-members, 8 clients; lossy network, partitions, clogs, crashes, pauses and clock jumps at once; clocks ±200 ms with drift; snapshot every 10 entries.',
    voters: 5,
    nonMembers: 2,
    clients: 8,
    network: LOSSY,
    netNemesis: { partitions: PARTITION_KINDS, clogs: true },
    voterNemesis: { crashes: true, pauses: true, clockJumps: true, maxClockJumpMs: 150, maxDown: 2 },
    disk: { tornWriteRate: 0.5 },
    skewMs: 200,
    driftPpm: 100,
    snapshotEveryEntries: 10,
    keepEntries: 0,
  }),
  nodeStrongScenario({
    name: 'node-strong-5-membership',
    description:
      '5 voters + 2 non-members, 6 clients; leadership transfers and a voter removed and re-added mid-workload, with partitions and 2% loss.',
    voters: 5,
    nonMembers: 2,
    clients: 6,
    network: { lossRate: 0.02 },
    netNemesis: { partitions: ['isolate', 'majority'] },
    voterNemesis: { pauses: true },
    skewMs: 100,
    membership: true,
  }),
];

for (const s of NODE_STRONG_SCENARIOS) registerScenario(s);
