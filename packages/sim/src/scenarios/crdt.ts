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
import { compareHlc, encodeDigest, encodeState, type Hlc, type KeyState } from '@parley/crdt';
import type { PeerId } from '@parley/interface';
import { checkConvergence, type EventualWrite } from '../check/convergence.js';
import { HistoryRecorder } from '../check/history.js';
import { between } from '../kernel.js';
import { Nemesis, type NemesisOptions, PARTITION_KINDS } from '../nemesis.js';
import { registerScenario, type Scenario, type ScenarioRun } from '../scenario.js';
import { type Simulation, violation } from '../simulation.js';
import { CrdtReplicaNode } from './crdt-replica.js';

const NAMESPACE = 'sim';
const REGISTER_KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
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
  safetyMs?: number;
  livenessBoundMs?: number;
}

const stampOfState = (s: KeyState): Hlc => ({ wallMs: s.wallMs, logical: s.logical, node: s.node });

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
  let running = true;
  let opCounter = 0;
  let reads = 0;
  let writes = 0;

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
        }).then((node) => {
          startClient(node, ctx.scheduler, process);
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

  function operate(node: CrdtReplicaNode, process: string): void {
    const roll = rng.int(100);
    if (roll < 35) {
      const key = REGISTER_KEYS[rng.int(REGISTER_KEYS.length)]!;
      const value = `${process}:${opCounter++}`;
      let set = written.get(key);
      if (!set) written.set(key, (set = new Set()));
      set.add(value);
      history.invoke(process, 'write', value, key);
      writes++;
      node
        .write((r, now) => {
          const delta = r.set(key, value, now);
          const s = delta.states[0]!;
          versionStamps.set(r.get(key, now)!.version, stampOfState(s));
          return delta;
        })
        .then((delta) => {
          const stamp = stampOfState(delta.states[0]!);
          acked.push({ key, stamp, replica: process });
          ownLatest.set(`${process}/${key}`, stamp);
          history.ok(process, value);
        });
    } else if (roll < 45) {
      const key = REGISTER_KEYS[rng.int(REGISTER_KEYS.length)]!;
      history.invoke(process, 'delete', null, key);
      writes++;
      node
        .write((r, now) => r.delete(key, now))
        .then((delta) => {
          const stamp = stampOfState(delta.states[0]!);
          acked.push({ key, stamp, delete: true, replica: process });
          ownLatest.set(`${process}/${key}`, stamp);
          history.ok(process, null);
        });
    } else if (roll < 65) {
      const key = COUNTER_KEYS[rng.int(COUNTER_KEYS.length)]!;
      const by = between(rng, -3, 5) || 1;
      history.invoke(process, 'add', by, key);
      writes++;
      node
        .write((r, now) => r.increment(key, by, now))
        .then(() => {
          counterSums.set(key, (counterSums.get(key) ?? 0) + by);
          history.ok(process, by);
        });
    } else {
      const key = REGISTER_KEYS[rng.int(REGISTER_KEYS.length)]!;
      reads++;
      history.invoke(process, 'read', null, key);
      const entry = node.replica.get(key, node.nowMs());
      checkRead(process, key, entry?.value as string | undefined, entry?.version);
      history.ok(process, (entry?.value as string | undefined) ?? null);
    }
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
      const states = new Map(ns.map((n) => [n.replica.replicaId, n.replica]));
      const result = checkConvergence(states, acked, {
        equal: (a, b) => bytesEqual(encodeState(a.state()), encodeState(b.state())),
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
      for (const key of COUNTER_KEYS) {
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
      for (const n of ns) {
        torn += n.counters.tornRecords;
        drift += n.counters.driftRejections;
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
      };
    },
  };
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
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
];

for (const scenario of CRDT_SCENARIOS) registerScenario(scenario);
