/**
 * `crdt-*`: 3–7 replicas of one eventual namespace under faults. Each replica
 * runs a client that writes registers (set, delete) and PN-counters
 * (increment) and reads them; the nemesis injects the scenario's faults during
 * the safety phase; then every fault stops and all replicas must converge.
 *
 * Checked continuously: a read returns only a value some client wrote, and a
 * replica reads its own acknowledged writes (or something newer by the LWW
 * rule). Checked after convergence: every replica holds an equal state, no
 * acknowledged write vanished unless an LWW-later write overrode it (the
 * convergence checker of ./check), and every counter equals the sum of its
 * acknowledged increments exactly.
 */

import { checkConvergence, type EventualWrite, HistoryRecorder } from '@parley/check';
import { compareHlc, encodeDigest, encodeState, type Hlc, type KeyState, type NamespaceReplica } from '@parley/crdt';
import type { PeerId } from '@parley/interface';
import { between, Nemesis, type NemesisOptions, PARTITION_KINDS, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { bytesEqual } from '../bytes.js';
import { DeliveryBoundTracker, trackReplica } from './delivery-bound.js';
import { CrdtReplicaNode } from './replica.js';

const NAMESPACE = 'sim';
const REGISTER_KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
/** With GC on, more keys: a key must sit unwritten past its TTL and the grace period to be collected. */
const GC_REGISTER_KEYS = Array.from({ length: 24 }, (_, i) => `k${i}`);
const COUNTER_KEYS = ['c0', 'c1'];
/** Clock skew stays well inside the replicas' drift bound, as the brief requires. */
const MAX_CLOCK_DRIFT_MS = 60_000;

export interface CrdtScenarioConfig {
  name: string;
  description: string;
  /** Network faults during the safety phase. */
  network?: {
    lossRate?: number;
    duplicateRate?: number;
    reorder?: boolean;
    latency?: { minMs: number; meanMs: number; maxMs: number };
  };
  nemesis: NemesisOptions;
  /** Static clock skew: offsets up to ±this, drift up to ±200 ppm. */
  maxClockOffsetMs?: number;
  /** A periodic wobble of up to ±this on every clock (period 2–10 s). */
  maxClockWobbleMs?: number;
  /** Disk faults on every host. */
  disk?: { tornWriteRate?: number; readErrorRate?: number };
  /**
   * Tombstone GC within the run: every write carries a TTL of 1..maxTtlSeconds, tombstones
   * and expired entries are collected after `graceMs` by a `gc` every ~`everyMs` on each
   * replica, and clients also delete counters. Clocks are exact (GC compares the writer's
   * stamp with the local clock). Replaces the exact counter sums (counters expire) with:
   * a deleted key stays deleted, and no counter comes back.
   */
  gc?: { maxTtlSeconds: number; graceMs: number; everyMs: number };
  /**
   * Clients act in lock-step rounds every `everyMs`: in each round every replica writes
   * the same key at the same virtual millisecond on exact clocks, so HLC stamps tie on
   * (wallMs, logical) and only the node id orders them.
   */
  lockstep?: { everyMs: number };
  safetyMs?: number;
  livenessBoundMs?: number;
}

const stampOfState = (s: KeyState): Hlc => ({ wallMs: s.wallMs, logical: s.logical, node: s.node });

/** The stamp a version string names (`<wallMs base36>.<logical base36>.<node>`, see @parley/crdt hlcVersion). */
function stampOfVersion(version: string): Hlc {
  const [wall, logical, ...node] = version.split('.');
  return { wallMs: Number.parseInt(wall!, 36), logical: Number.parseInt(logical!, 36), node: node.join('.') };
}

/** Builds one `crdt-*` scenario from its fault configuration. */
export function crdtScenario(config: CrdtScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? 8_000,
    livenessBoundMs: config.livenessBoundMs ?? 20_000,
    setup: (sim) => setupCrdt(sim, config),
  };
}

function setupCrdt(sim: Simulation, config: CrdtScenarioConfig): ScenarioRun {
  const rng = sim.random;
  const replicas = 3 + rng.int(5);
  const ids: PeerId[] = Array.from({ length: replicas }, (_, i) => `r${i}`);
  const history = new HistoryRecorder({ nowMs: () => sim.nowMs() });
  /** Acknowledged register writes and deletes, for the convergence checker. */
  const acked: EventualWrite<Hlc>[] = [];
  /** Acknowledged increments per counter key. */
  const counterSums = new Map<string, number>();
  /** Every value ever written per register key (acknowledged or not). */
  const written = new Map<string, Set<string>>();
  /** Stamp of every register version ever produced. */
  const versionStamps = new Map<string, Hlc>();
  /** Each replica's latest acknowledged write per register key. */
  const ownLatest = new Map<string, Hlc>();
  /** With GC on: when a counter increment crossed the delivery bound of ./crdt-delivery-bound.ts. */
  const bound = config.gc ? new DeliveryBoundTracker(config.gc.graceMs, ids) : undefined;
  /** Counter keys whose reads differ only because an increment crossed the delivery bound. */
  const beyondBoundKeys = new Set<string>();
  let running = true;
  let opCounter = 0;
  let reads = 0;
  let writes = 0;

  const gc = config.gc;
  const registerKeys = gc ? GC_REGISTER_KEYS : REGISTER_KEYS;
  /** Per replica and key: the newest delete (tombstone) it has seen. */
  const deleteSeen = new Map<string, Hlc>();
  let deletedKeyReads = 0;
  let hlcTies = 0;
  /** key → "wallMs.logical" → nodes that wrote it (for counting ties). */
  const stampsByKey = new Map<string, Map<string, Set<string>>>();
  const noteStamp = (key: string, stamp: Hlc) => {
    let byStamp = stampsByKey.get(key);
    if (!byStamp) stampsByKey.set(key, (byStamp = new Map()));
    const at = `${stamp.wallMs}.${stamp.logical}`;
    let nodes = byStamp.get(at);
    if (!nodes) {
      if (byStamp.size >= 10_000) byStamp.clear(); // bounded: ties are between recent writes
      byStamp.set(at, (nodes = new Set()));
    }
    if (!nodes.has(stamp.node) && nodes.size > 0) hlcTies++;
    nodes.add(stamp.node);
  };
  const ttlOption = (): { ttlSeconds: number } | undefined =>
    gc ? { ttlSeconds: 1 + rng.int(gc.maxTtlSeconds) } : undefined;
  const maxOffset = config.maxClockOffsetMs ?? 0;
  const maxWobble = config.maxClockWobbleMs ?? 0;
  for (const id of ids) {
    const clock =
      maxOffset > 0 || maxWobble > 0
        ? {
            offsetMs: between(rng, -maxOffset, maxOffset),
            driftPpm: maxOffset > 0 ? between(rng, -200, 200) : 0,
            periodic:
              maxWobble > 0
                ? { amplitudeMs: between(rng, 1, maxWobble), periodMs: between(rng, 2_000, 10_000) }
                : undefined,
          }
        : undefined;
    sim.addHost(
      id,
      (ctx) => {
        const process = id;
        // An operation still open from before a crash is indeterminate.
        if (history.isOpen(process)) history.info(process, null, { error: 'crash' });
        return CrdtReplicaNode.boot(ctx, {
          namespace: NAMESPACE,
          antiEntropyMs: 400,
          maxLogRecords: 32,
          maxClockDriftMs: MAX_CLOCK_DRIFT_MS,
          ...(gc
            ? {
                ttl: { defaultTtlSeconds: 1, maxTtlSeconds: gc.maxTtlSeconds, tombstoneGraceMs: gc.graceMs },
                gcEveryMs: gc.everyMs,
                onMerge: (node: CrdtReplicaNode) => bound?.observe(trackReplica(node.replica), node.nowMs()),
              }
            : {}),
        }).then((node) => {
          if (!config.lockstep) startClient(node, ctx.scheduler, process);
          return node;
        });
      },
      {
        clock,
        disk: config.disk,
      },
    );
  }

  function startClient(
    node: CrdtReplicaNode,
    scheduler: { after(ms: number, fn: () => void): unknown },
    process: string,
  ) {
    const loop = () => {
      if (!running) return;
      scheduler.after(between(rng, 20, 150), () => {
        if (!running) return;
        if (!history.isOpen(process)) operate(node, process);
        loop();
      });
    };
    loop();
  }

  /** One client operation; `preset` (lock-step rounds) fixes the kind of operation and the key index. */
  function operate(node: CrdtReplicaNode, process: string, preset?: { roll: number; pick: number }): void {
    const roll = preset?.roll ?? rng.int(100);
    const pickFrom = (keys: readonly string[]) => keys[(preset?.pick ?? rng.int(1_000_000)) % keys.length]!;
    if (gc && roll >= 60 && roll < 65) {
      // Delete a counter (only with GC on: the exact-sum check assumes counters are never deleted).
      const key = pickFrom(COUNTER_KEYS);
      history.invoke(process, 'delete', null, key);
      writes++;
      node
        .write((r, now) => {
          const delta = r.delete(key, now);
          const tomb = delta.states[0]!;
          noteStamp(key, stampOfState(tomb));
          if (tomb.type === 'tombstone') bound?.noteDelete(key, stampOfState(tomb), { node: tomb.node, seq: tomb.seq });
          return delta;
        })
        .then((delta) => {
          noteDelete(process, key, stampOfState(delta.states[0]!));
          history.ok(process, null);
        });
      return;
    }
    if (gc && roll >= 90) {
      const key = pickFrom(COUNTER_KEYS);
      reads++;
      history.invoke(process, 'read', null, key);
      const entry = readChecked(node, process, key);
      history.ok(process, (entry?.value as number | undefined) ?? null);
      return;
    }
    if (roll < 35) {
      const key = pickFrom(registerKeys);
      const value = `${process}:${opCounter++}`;
      let set = written.get(key);
      if (!set) written.set(key, (set = new Set()));
      set.add(value);
      history.invoke(process, 'write', value, key);
      writes++;
      node
        .write((r, now) => {
          const delta = r.set(key, value, now, ttlOption());
          const s = delta.states[0]!;
          versionStamps.set(r.get(key, now)!.version, stampOfState(s));
          noteStamp(key, stampOfState(s));
          return delta;
        })
        .then((delta) => {
          const stamp = stampOfState(delta.states[0]!);
          acked.push({ key, stamp, replica: process });
          ownLatest.set(`${process}/${key}`, stamp);
          history.ok(process, value);
        });
    } else if (roll < 45) {
      const key = pickFrom(registerKeys);
      history.invoke(process, 'delete', null, key);
      writes++;
      node
        .write((r, now) => {
          const delta = r.delete(key, now);
          noteStamp(key, stampOfState(delta.states[0]!));
          return delta;
        })
        .then((delta) => {
          const stamp = stampOfState(delta.states[0]!);
          acked.push({ key, stamp, delete: true, replica: process });
          ownLatest.set(`${process}/${key}`, stamp);
          noteDelete(process, key, stamp);
          history.ok(process, null);
        });
    } else if (roll < 65) {
      const key = pickFrom(COUNTER_KEYS);
      const by = between(rng, -3, 5) || 1;
      history.invoke(process, 'add', by, key);
      writes++;
      node
        .write((r, now) => {
          const delta = r.increment(key, by, now, ttlOption());
          const counter = delta.states.find((st) => st.key === key);
          const share = counter?.type === 'counter' ? counter.shares.get(r.replicaId) : undefined;
          if (counter && share) {
            bound?.noteIncrement(
              key,
              stampOfState(counter),
              { node: r.replicaId, seq: share.seq },
              share.wallMs,
              trackReplica(node.replica),
            );
          }
          return delta;
        })
        .then(() => {
          counterSums.set(key, (counterSums.get(key) ?? 0) + by);
          history.ok(process, by);
        });
    } else {
      const key = pickFrom(registerKeys);
      reads++;
      history.invoke(process, 'read', null, key);
      const entry = readChecked(node, process, key);
      checkRead(process, key, entry?.value as string | undefined, entry?.version);
      history.ok(process, (entry?.value as string | undefined) ?? null);
    }
  }

  function noteDelete(process: string, key: string, stamp: Hlc): void {
    const seen = deleteSeen.get(`${process}/${key}`);
    if (!seen || compareHlc(stamp, seen) > 0) deleteSeen.set(`${process}/${key}`, stamp);
  }

  /**
   * Reads `key` and checks that a deleted key stays deleted: the value read (a register,
   * or a counter's latest increment) is never older, by the LWW order, than a delete this
   * replica has already seen (its own, or a tombstone it held). A tombstone collected too
   * early lets a delayed older write come back and fails this check.
   */
  function readChecked(node: CrdtReplicaNode, process: string, key: string) {
    const state = node.replica.stateOf(key);
    if (state?.type === 'tombstone') noteDelete(process, key, stampOfState(state));
    const entry = node.replica.get(key, node.nowMs());
    const seen = deleteSeen.get(`${process}/${key}`);
    if (entry && seen) {
      deletedKeyReads++;
      const stamp = stampOfVersion(entry.version);
      if (compareHlc(stamp, seen) < 0) {
        throw violation(
          'crdt/deleted-stays-deleted',
          `${process} read ${key} = ${JSON.stringify(entry.value)} (${entry.version}), older than the delete ${JSON.stringify(seen)} it had seen`,
        );
      }
    }
    return entry;
  }

  /** Continuous invariants on every read: validity and read-your-writes. */
  function checkRead(process: string, key: string, value: string | undefined, version: string | undefined): void {
    const mine = ownLatest.get(`${process}/${key}`);
    if (value === undefined) {
      // Absent is fine unless this replica's own latest acknowledged write is a live set
      // and no delete of the key was ever issued.
      return;
    }
    if (typeof value !== 'string' || !written.get(key)?.has(value)) {
      throw violation('crdt/read-validity', `${process} read ${JSON.stringify(value)} under ${key}, never written`);
    }
    const stamp = version === undefined ? undefined : versionStamps.get(version);
    if (!stamp) throw violation('crdt/read-validity', `${process} read unknown version ${version} of ${key}`);
    if (mine && compareHlc(stamp, mine) < 0) {
      throw violation(
        'crdt/read-your-writes',
        `${process} read ${key}@${version} older than its own acknowledged write ${JSON.stringify(mine)}`,
      );
    }
  }

  const nemesis = new Nemesis(sim, ids, config.nemesis).start();
  if (config.network) sim.network.configure(config.network);

  if (config.lockstep) {
    const every = config.lockstep.everyMs;
    const round = () => {
      if (!running) return;
      // One kind of operation and one key for the whole round: writes at the same ms tie.
      const preset = { roll: rng.int(100), pick: rng.int(1_000_000) };
      for (const id of ids) {
        const h = sim.host<CrdtReplicaNode>(id);
        if (h.state === 'up' && h.app && !history.isOpen(id)) operate(h.app, id, preset);
      }
      sim.schedule(every, round);
    };
    sim.schedule(every, round);
  }

  const nodes = (): CrdtReplicaNode[] =>
    ids.map((id) => sim.host<CrdtReplicaNode>(id).app).filter((n): n is CrdtReplicaNode => n !== undefined);

  let digestsEqual = false;
  return {
    quiesce() {
      running = false;
      nemesis.stop();
    },
    converged() {
      const ns = nodes();
      if (ns.length !== ids.length) return false;
      const first = encodeDigest(ns[0]!.replica.digest());
      digestsEqual = ns.every((n) => bytesEqual(encodeDigest(n.replica.digest()), first));
      return digestsEqual;
    },
    check() {
      // Operations left open (a crash, or the end of the workload) are indeterminate.
      for (const id of ids) if (history.isOpen(id)) history.info(id, null, { error: 'unfinished' });
      const ns = nodes();
      // With GC on, bytes differ between converged replicas until every late, already-expired
      // copy is collected too (crdt INTERNALS §4): there, replicas must agree on every read
      // (exact clocks: one nowMs), and only unexpired writes must survive.
      const nowMs = ns[0]?.nowMs() ?? 0;
      const mustSurvive = gc ? acked.filter((w) => w.stamp.wallMs + gc.maxTtlSeconds * 1_000 > nowMs) : acked;
      const states = new Map(ns.map((n) => [n.replica.replicaId, n.replica]));
      const sameReads = (a: NamespaceReplica, b: NamespaceReplica) => {
        const keys = new Set([...a.state().states, ...b.state().states].map((st) => st.key));
        for (const key of keys) {
          const x = a.get(key, nowMs);
          const y = b.get(key, nowMs);
          if (x?.version === y?.version && JSON.stringify(x?.value) === JSON.stringify(y?.value)) continue;
          // The crdt's stated limit, reached by this scenario's faults (./crdt-delivery-bound.ts):
          // judged on every other key, counted here.
          if (bound?.explains(key, trackReplica(a), trackReplica(b))) {
            beyondBoundKeys.add(key);
            continue;
          }
          return false;
        }
        return true;
      };
      const result = checkConvergence(states, mustSurvive, {
        equal: (a, b) => (gc ? sameReads(a, b) : bytesEqual(encodeState(a.state()), encodeState(b.state()))),
        stampOf: (r, key) => {
          const s = r.stateOf(key);
          return s ? stampOfState(s) : undefined;
        },
        compare: compareHlc,
      });
      if (!result.ok) {
        const v = result.violations[0]!;
        throw violation(
          'crdt/convergence',
          v.type === 'diverged'
            ? `replicas ${v.replicas[0]} and ${v.replicas[1]} hold different states`
            : `${v.replica} lost the acknowledged write to ${v.key} by ${v.write.replica} (${JSON.stringify(v.write.stamp)}), holds ${JSON.stringify(v.found)}`,
        );
      }
      for (const key of gc ? [] : COUNTER_KEYS) {
        const expected = counterSums.get(key);
        for (const n of ns) {
          const got = n.replica.get(key, n.nowMs())?.value;
          if (expected === undefined ? got !== undefined : got !== expected) {
            throw violation(
              'crdt/counter-sum',
              `${n.replica.replicaId} reads ${key} = ${JSON.stringify(got)}, acknowledged increments sum to ${expected}`,
            );
          }
        }
      }
    },
    metrics() {
      const totals = { replicas, writes, reads, acked: acked.length, history: history.size };
      const ns = nodes();
      let torn = 0;
      let drift = 0;
      let gcRemovals = 0;
      for (const n of ns) {
        torn += n.counters.tornRecords;
        drift += n.counters.driftRejections;
        gcRemovals += n.counters.gcRemovals;
      }
      return {
        ...totals,
        partitions: nemesis.stats.partitions,
        crashes: nemesis.stats.crashes,
        pauses: nemesis.stats.pauses,
        clogs: nemesis.stats.clogs,
        clockJumps: nemesis.stats.clockJumps,
        tornRecords: torn,
        driftRejections: drift,
        deletedKeyReads,
        'guard.gcRemovals': gcRemovals,
        ...(bound
          ? {
              unawareIncrements: bound.unawareIncrements,
              deliveryBoundCrossings: bound.crossings,
              divergedBeyondBound: beyondBoundKeys.size,
            }
          : {}),
        'guard.hlcTies': hlcTies,
      };
    },
  };
}

const LOSSY = { lossRate: 0.15, duplicateRate: 0.1, reorder: true, latency: { minMs: 1, meanMs: 8, maxMs: 120 } };

export const CRDT_SCENARIOS: readonly Scenario[] = [
  crdtScenario({
    name: 'crdt-lossy',
    description: 'loss 15%, duplication 10%, reordering and a latency tail, with clogged links.',
    network: LOSSY,
    nemesis: { clogs: true },
  }),
  crdtScenario({
    name: 'crdt-partition',
    description: 'partitions of every kind in turn: symmetric, one-way, isolate-one, majority/minority, bridge.',
    network: { lossRate: 0.02, reorder: true },
    nemesis: { partitions: PARTITION_KINDS },
  }),
  crdtScenario({
    name: 'crdt-crash',
    description: 'crashes with restart from disk, torn tail writes and transient read errors.',
    network: { lossRate: 0.02, duplicateRate: 0.02 },
    nemesis: { crashes: true },
    disk: { tornWriteRate: 0.5, readErrorRate: 0.05 },
  }),
  crdtScenario({
    name: 'crdt-pause-skew',
    description:
      'paused processes; clocks with offsets ±5 s, ±200 ppm drift and a periodic wobble ±400 ms; clock jumps ±5 s (all inside the 60 s drift bound).',
    network: { lossRate: 0.02 },
    nemesis: { pauses: true, clockJumps: true, maxClockJumpMs: 5_000 },
    maxClockOffsetMs: 5_000,
    maxClockWobbleMs: 400,
  }),
  crdtScenario({
    name: 'crdt-chaos',
    description:
      'everything at once: lossy network, partitions of every kind, crashes, pauses, clogs, clock skew and jumps.',
    network: LOSSY,
    nemesis: {
      partitions: PARTITION_KINDS,
      crashes: true,
      pauses: true,
      clogs: true,
      clockJumps: true,
      maxClockJumpMs: 3_000,
    },
    maxClockOffsetMs: 3_000,
    disk: { tornWriteRate: 0.5, readErrorRate: 0.02 },
  }),
  crdtScenario({
    name: 'crdt-gc',
    description:
      'tombstone GC inside the run: TTLs of 1–2 s, a 2 s grace period, gc every ~300 ms; links held for 2.5–6 s deliver old deltas after collection; isolations and crashes; counters deleted too.',
    network: { lossRate: 0.05, reorder: true },
    nemesis: {
      clogs: true,
      partitions: ['isolate', 'majority'],
      crashes: true,
      durationMs: { min: 2_500, max: 6_000 },
    },
    gc: { maxTtlSeconds: 2, graceMs: 2_000, everyMs: 300 },
  }),
  crdtScenario({
    name: 'crdt-ties',
    description:
      'HLC ties: exact clocks, clients act in lock-step rounds every 40 ms, all on one key at the same millisecond, so stamps differ only by node id; loss, reordering, clogs and partitions.',
    network: { lossRate: 0.05, duplicateRate: 0.05, reorder: true },
    nemesis: { clogs: true, partitions: PARTITION_KINDS },
    lockstep: { everyMs: 40 },
  }),
];

for (const scenario of CRDT_SCENARIOS) registerScenario(scenario);
