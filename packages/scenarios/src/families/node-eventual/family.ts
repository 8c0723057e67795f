/**
 * `node-eventual-*`: the real Parley node (`createNode` from @parley/node) on
 * the simulated world — 5–7 nodes on the simulator's transport, disks, clocks
 * and scheduler — each running a client that sets, deletes and increments
 * entries of one eventual namespace (some with short TTLs) and reads them,
 * while the nemesis partitions, crashes (restart from disk), pauses and
 * skews. Then every fault stops and all nodes must converge.
 *
 * Clients also edit one Yjs document (`ns.yjs`); after convergence every
 * node's copy must hold the same items, each pushed by some client.
 *
 * Checked on every read: validity (only values some client wrote) and
 * read-your-writes. After convergence: every node holds a byte-identical
 * state (equal digests and equal live entries for TTL runs), no acknowledged
 * write vanished unless an LWW-later write or its expiry overrode it (no
 * resurrection), counters equal the sum of their acknowledged increments,
 * and every node agrees on which entries have expired.
 *
 * With `gossipBeforeDurable` a write that ends without an answer (a crash,
 * `outcome_unknown`) may still reach every replica: a counter must then equal
 * its acknowledged increments plus some of those unanswered, and the
 * crash-mid-write nemesis crashes a node right after it issued a write, while
 * the write's gossip is on the wire and its batch on the disk, then restarts
 * it cut off from the others so that it writes again before anti-entropy
 * hands back what its disk lost.
 */

import { checkConvergence, type EventualWrite, HistoryRecorder } from '@parley/check';
import { compareHlc, encodeDigest, encodeState, type Hlc, type NamespaceReplica } from '@parley/crdt';
import type { PeerId } from '@parley/interface';
import {
  createNode,
  type EventualNamespace,
  loadDocumentEngines,
  type NodeLogger,
  type ParleyNode,
} from '@parley/node';
import { internals, type ParleyNodeInternals } from '@parley/node/testing';
import {
  between,
  type HostContext,
  Nemesis,
  type NemesisOptions,
  PARTITION_KINDS,
  type Simulation,
  violation,
} from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { bytesEqual } from '../bytes.js';
import { digestsAgree } from './digests.js';

const NAMESPACE = 'sim';
const REGISTER_KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
const COUNTER_KEYS = ['c0', 'c1'];

type YDoc = Awaited<ReturnType<EventualNamespace['yjs']>>;
const YJS_KEY = 'doc';

const silent: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };

export interface NodeEventualConfig {
  name: string;
  description: string;
  network?: {
    lossRate?: number;
    duplicateRate?: number;
    reorder?: boolean;
    latency?: { minMs: number; meanMs: number; maxMs: number };
  };
  nemesis: NemesisOptions;
  maxClockOffsetMs?: number;
  disk?: { tornWriteRate?: number; readErrorRate?: number };
  /** Short TTLs: registers get 1..maxTtl s, the namespace's max TTL and tombstone grace are maxTtl. */
  maxTtlSeconds?: number;
  /** One node is crashed for this long (simulated ms) in the middle of the run, then restarted. */
  offlineMs?: number;
  /**
   * Repeatedly isolate a node, let it take writes only it holds, crash it, restart it
   * from disk, then heal: its acknowledged writes must survive on its own disk.
   */
  isolateThenCrash?: boolean;
  safetyMs?: number;
  livenessBoundMs?: number;
  /** The nodes run with `eventual.gossipBeforeDurable`. */
  gossipBeforeDurable?: boolean;
  /**
   * Now and then a node issues a write, crashes 0–3 ms later (inside the disk's write latency),
   * and restarts isolated for 200–600 ms, taking writes before anti-entropy can run.
   */
  crashMidWrite?: boolean;
}

/** The stamp a version string names (`hlcVersion`: wall36.logical36.node). */
function stampOfVersion(version: string): Hlc {
  const a = version.indexOf('.');
  const b = version.indexOf('.', a + 1);
  return {
    wallMs: Number.parseInt(version.slice(0, a), 36),
    logical: Number.parseInt(version.slice(a + 1, b), 36),
    node: version.slice(b + 1),
  };
}

export function nodeEventualScenario(config: NodeEventualConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? 8_000,
    livenessBoundMs: config.livenessBoundMs ?? 20_000,
    // The document engines load before simulated time starts: a module read inside the run
    // would take real time between simulated steps, and the seed would not replay.
    setup: async (sim) => {
      await loadDocumentEngines();
      return setup(sim, config);
    },
  };
}

function bootNode(ctx: HostContext, config: NodeEventualConfig): Promise<ParleyNode> {
  const ttl = config.maxTtlSeconds;
  return createNode({
    transport: ctx.transport,
    storage: { kv: ctx.kv('node'), raftLog: ctx.raftLog('raft') },
    clock: ctx.clock,
    scheduler: ctx.scheduler,
    random: ctx.random,
    logger: silent,
    eventual: {
      antiEntropyMs: 400,
      requestTimeoutMs: 1_000,
      compactLogBytes: 4_096,
      gossipBeforeDurable: config.gossipBeforeDurable === true,
      ...(ttl ? { maxTtlSeconds: ttl, defaultTtlSeconds: ttl, tombstoneGraceMs: ttl * 1000, gcIntervalMs: 500 } : {}),
    },
  });
}

function setup(sim: Simulation, config: NodeEventualConfig): ScenarioRun {
  const rng = sim.random;
  const count = 5 + rng.int(3);
  const ids: PeerId[] = Array.from({ length: count }, (_, i) => `n${i}`);
  const history = new HistoryRecorder({ nowMs: () => sim.nowMs() });
  const acked: Array<EventualWrite<Hlc> & { expiresAt: number }> = [];
  const counterSums = new Map<string, number>();
  /** Per counter, the sums of the negative and of the positive increments not (yet) acknowledged. */
  const counterOpen = new Map<string, { lo: number; hi: number }>();
  /** Each client's operation, callable by the nemesis (a forced roll); false when its node is gone. */
  const clients = new Map<PeerId, (roll: number) => boolean>();
  const written = new Map<string, Set<string>>();
  const ownLatest = new Map<string, Hlc>();
  /** Simulated time at which each process last came back under a new replica id. */
  const reincarnatedAt = new Map<string, number>();
  /** Each live host's Y.Doc of YJS_KEY (replaced on every boot). */
  const ydocs = new Map<PeerId, YDoc>();
  const pushed = new Set<string>();
  let yjsEdits = 0;
  let running = true;
  let opCounter = 0;
  let reads = 0;
  let writes = 0;
  const ttlMode = config.maxTtlSeconds !== undefined;

  const maxOffset = config.maxClockOffsetMs ?? 0;
  for (const id of ids) {
    const clock =
      maxOffset > 0 ? { offsetMs: between(rng, -maxOffset, maxOffset), driftPpm: between(rng, -200, 200) } : undefined;
    sim.addHost(
      id,
      async (ctx) => {
        if (history.isOpen(id)) history.info(id, null, { error: 'crash' });
        const node = internals(await bootNode(ctx, config));
        const ns = node.eventual(NAMESPACE);
        await (ns as unknown as { ready: Promise<void> }).ready;
        ydocs.set(id, await ns.yjs(YJS_KEY));
        startClient(node, ns, ctx, id);
        return node;
      },
      { clock, disk: config.disk },
    );
  }

  const replicaOf = (node: ParleyNodeInternals): NamespaceReplica => node.eventualModule.namespace(NAMESPACE).replica;

  function startClient(node: ParleyNodeInternals, ns: EventualNamespace, ctx: HostContext, process: string) {
    const incarnations = () => node.eventualModule.namespace(NAMESPACE).counters.incarnations;
    let seen = incarnations();
    if (seen > 0) reincarnatedAt.set(process, sim.nowMs());
    // Callable only while this boot's node is the host's (not after a crash, of any nemesis).
    clients.set(process, (roll) => {
      if (sim.host(process).app !== node) return false;
      operate(node, ns, process, roll);
      return true;
    });
    const loop = () => {
      if (!running) return;
      ctx.scheduler.after(between(rng, 20, 150), () => {
        if (!running) return;
        const now = incarnations();
        if (now !== seen) {
          seen = now;
          reincarnatedAt.set(process, sim.nowMs());
          for (const k of [...ownLatest.keys()]) if (k.startsWith(`${process}/`)) ownLatest.delete(k);
        }
        if (!history.isOpen(process)) operate(node, ns, process);
        loop();
      });
    };
    loop();
  }

  const ttlOf = (): number | undefined => (ttlMode ? between(rng, 1, config.maxTtlSeconds as number) : undefined);

  function operate(node: ParleyNodeInternals, ns: EventualNamespace, process: string, roll = rng.int(100)): void {
    const startedAt = sim.nowMs();
    const fail = (err: unknown) => history.info(process, null, { error: String(err) });
    if (roll < 35) {
      // Now and then a burst: two or three keys written at once, so a node's group commit holds
      // several local writes (logged as one joined delta, persist.ts); one history operation.
      const keys = [REGISTER_KEYS[rng.int(REGISTER_KEYS.length)] as string];
      if (rng.int(5) === 0) {
        for (let extra = 1 + rng.int(2); extra > 0; extra--) {
          const more = REGISTER_KEYS.filter((k) => !keys.includes(k));
          keys.push(more[rng.int(more.length)] as string);
        }
      }
      const values = keys.map((key) => {
        const value = `${process}:${opCounter++}`;
        let set = written.get(key);
        if (!set) written.set(key, (set = new Set()));
        set.add(value);
        return value;
      });
      history.invoke(process, 'write', values.join(' '), keys.join(' '));
      writes += keys.length;
      const ttl = ttlOf();
      const sets = keys.map((key, i) =>
        ns.set(key, values[i] as string, ttl === undefined ? {} : { ttl }).then((entry) => {
          const stamp = stampOfVersion(entry.version);
          acked.push({ key, stamp, replica: process, expiresAt: entry.expiresAt });
          ownLatest.set(`${process}/${key}`, stamp);
        }),
      );
      Promise.all(sets).then(() => history.ok(process, values.join(' ')), fail);
    } else if (roll < 45) {
      const key = REGISTER_KEYS[rng.int(REGISTER_KEYS.length)] as string;
      history.invoke(process, 'delete', null, key);
      writes++;
      ns.delete(key).then(() => {
        // Our tombstone's stamp, unless an LWW-later remote state already replaced it.
        const s = replicaOf(node).stateOf(key);
        const mine = node.eventualModule.namespace(NAMESPACE).replicaId;
        if (s && s.type === 'tombstone' && s.node === mine) {
          const stamp = { wallMs: s.wallMs, logical: s.logical, node: s.node };
          acked.push({ key, stamp, delete: true, replica: process, expiresAt: Number.POSITIVE_INFINITY });
          ownLatest.set(`${process}/${key}`, stamp);
        }
        history.ok(process, null);
      }, fail);
    } else if (roll < 50) {
      // A Yjs edit: applied at once, persisted and spread by the node.
      const doc = ydocs.get(process);
      if (doc) {
        const value = `${process}:y${opCounter++}`;
        pushed.add(value);
        doc.getArray<string>('log').push([value]);
        yjsEdits++;
      }
    } else if (roll < 60 && !ttlMode) {
      const key = COUNTER_KEYS[rng.int(COUNTER_KEYS.length)] as string;
      const by = between(rng, -3, 5) || 1;
      history.invoke(process, 'add', by, key);
      writes++;
      const open = counterOpen.get(key) ?? { lo: 0, hi: 0 };
      counterOpen.set(key, open);
      const side = by < 0 ? 'lo' : 'hi';
      open[side] += by;
      ns.increment(key, by).then(() => {
        counterSums.set(key, (counterSums.get(key) ?? 0) + by);
        open[side] -= by;
        history.ok(process, by);
      }, fail);
    } else {
      const key = REGISTER_KEYS[rng.int(REGISTER_KEYS.length)] as string;
      reads++;
      history.invoke(process, 'read', null, key);
      ns.get(key).then((entry) => {
        try {
          checkRead(process, key, entry?.value as string | undefined, entry?.version, startedAt);
        } catch (err) {
          // A read completes in a promise: report the violation to the run, not as an unhandled rejection.
          sim.fail('correctness', err instanceof Error ? `${err.name}: ${err.message}` : String(err));
        }
        history.ok(process, (entry?.value as string | undefined) ?? null);
      }, fail);
    }
  }

  function checkRead(
    process: string,
    key: string,
    value: string | undefined,
    version: string | undefined,
    startedAt: number,
  ): void {
    if (value === undefined) return;
    if (typeof value !== 'string' || !written.get(key)?.has(value)) {
      throw violation('node-eventual/read-validity', `${process} read ${JSON.stringify(value)} under ${key}`);
    }
    const mine = ownLatest.get(`${process}/${key}`);
    const stamp = stampOfVersion(version as string);
    if (mine && compareHlc(stamp, mine) < 0 && (reincarnatedAt.get(process) ?? -1) < startedAt) {
      throw violation(
        'node-eventual/read-your-writes',
        `${process} read ${key}@${version} older than its own acknowledged write ${JSON.stringify(mine)}`,
      );
    }
  }

  const nemesis = new Nemesis(sim, ids, config.nemesis).start();
  if (config.network) sim.network.configure(config.network);
  let offline = 0;
  if (config.offlineMs !== undefined) {
    const victim = ids[rng.int(ids.length)] as PeerId;
    sim.schedule(1_000, () => {
      sim.host(victim).crash();
      offline++;
      sim.schedule(config.offlineMs as number, () => {
        if (sim.host(victim).state === 'down') sim.host(victim).restart();
      });
    });
  }

  let isolatedCrashes = 0;
  if (config.isolateThenCrash) {
    const cycle = () => {
      if (!running) return;
      const victim = ids[rng.int(ids.length)] as PeerId;
      if (sim.host(victim).state !== 'up') {
        sim.schedule(500, cycle);
        return;
      }
      sim.network.isolate(victim);
      sim.schedule(between(rng, 400, 1_200), () => {
        sim.host(victim).crash();
        isolatedCrashes++;
        sim.schedule(between(rng, 100, 600), () => {
          if (sim.host(victim).state === 'down') sim.host(victim).restart();
          sim.schedule(between(rng, 200, 600), () => {
            sim.network.heal();
            sim.schedule(between(rng, 300, 900), cycle);
          });
        });
      });
    };
    sim.schedule(between(rng, 200, 800), cycle);
  }

  let midWriteCrashes = 0;
  if (config.crashMidWrite) {
    const cycle = () => {
      if (!running) return;
      const victim = ids[rng.int(ids.length)] as PeerId;
      const write = clients.get(victim);
      // A set (roll 0) or an increment (55), unless the node is down or booting, or its client
      // is mid-operation (one at a time per process): then look again soon.
      if (history.isOpen(victim) || write?.(rng.int(2) === 0 ? 0 : 55) !== true) {
        sim.schedule(200, cycle);
        return;
      }
      sim.schedule(rng.int(4), () => {
        if (sim.host(victim).state !== 'up') return;
        sim.host(victim).crash();
        midWriteCrashes++;
        sim.schedule(between(rng, 100, 600), () => {
          if (sim.host(victim).state !== 'down') return;
          // It comes back cut off (its write's gossip has long arrived), so it writes again
          // before anti-entropy can hand it back what its disk lost.
          sim.network.isolate(victim);
          sim.host(victim).restart();
          sim.schedule(between(rng, 200, 600), () => sim.network.heal());
        });
      });
      sim.schedule(between(rng, 1_000, 2_000), cycle);
    };
    sim.schedule(between(rng, 300, 900), cycle);
  }

  const nodes = (): ParleyNodeInternals[] =>
    ids.map((id) => sim.host<ParleyNodeInternals>(id).app).filter((n): n is ParleyNodeInternals => n !== undefined);

  const yjsView = (id: PeerId): string | undefined => {
    const doc = ydocs.get(id);
    return doc ? JSON.stringify(doc.getArray('log').toJSON()) : undefined;
  };

  const liveView = (node: ParleyNodeInternals): string =>
    JSON.stringify(replicaOf(node).entries(sim.epochMs + sim.nowMs()));

  return {
    quiesce() {
      running = false;
      nemesis.stop();
    },
    converged() {
      const ns = nodes();
      if (ns.length !== ids.length) return false;
      if (!digestsAgree(ns.map(replicaOf))) return false;
      const y = yjsView(ids[0] as PeerId);
      if (y === undefined || !ids.every((id) => yjsView(id) === y)) return false;
      if (!ttlMode) return true;
      const view = liveView(ns[0] as ParleyNodeInternals);
      return ns.every((n) => liveView(n) === view);
    },
    check() {
      for (const id of ids) if (history.isOpen(id)) history.info(id, null, { error: 'unfinished' });
      const ns = nodes();
      const now = sim.epochMs + sim.nowMs();
      const states = new Map(ns.map((n) => [n.peerId, replicaOf(n)]));
      // Writes that expired, and writes a process made before it came back under a new replica id, may be gone.
      const relevant = acked.filter(
        (w) =>
          w.expiresAt > now &&
          !(
            w.replica !== undefined &&
            reincarnatedAt.has(w.replica) &&
            w.stamp.wallMs <= (reincarnatedAt.get(w.replica) as number) + sim.epochMs
          ),
      );
      const result = checkConvergence(states, relevant, {
        equal: ttlMode
          ? (a, b) =>
              bytesEqual(encodeDigest(a.digest()), encodeDigest(b.digest())) &&
              JSON.stringify(a.entries(now)) === JSON.stringify(b.entries(now))
          : (a, b) => bytesEqual(encodeState(a.state()), encodeState(b.state())),
        stampOf: (r, key) => {
          const s = r.stateOf(key);
          return s ? { wallMs: s.wallMs, logical: s.logical, node: s.node } : undefined;
        },
        compare: compareHlc,
      });
      if (!result.ok) {
        const v = result.violations[0];
        throw violation(
          'node-eventual/convergence',
          v?.type === 'diverged'
            ? `nodes ${v.replicas[0]} and ${v.replicas[1]} hold different states`
            : `${v?.replica} lost the acknowledged write to ${v?.key} (${JSON.stringify(v?.type === 'lost-write' ? v.write.stamp : null)}), holds ${JSON.stringify(v?.type === 'lost-write' ? v.found : null)}`,
        );
      }
      for (const item of JSON.parse(yjsView(ids[0] as PeerId) ?? '[]') as string[]) {
        if (!pushed.has(item)) throw violation('node-eventual/yjs-validity', `a Y.Doc holds ${item}, never pushed`);
      }
      if (!ttlMode) {
        for (const key of COUNTER_KEYS) {
          const expected = counterSums.get(key);
          // Early gossip: increments left without an answer may count too, any subset of them.
          const open = config.gossipBeforeDurable ? counterOpen.get(key) : undefined;
          const lo = (expected ?? 0) + (open?.lo ?? 0);
          const hi = (expected ?? 0) + (open?.hi ?? 0);
          const incremented = expected !== undefined || open !== undefined;
          for (const n of ns) {
            const got = replicaOf(n).get(key, now)?.value;
            const ok =
              got === undefined
                ? expected === undefined
                : incremented && typeof got === 'number' && got >= lo && got <= hi;
            if (!ok) {
              throw violation(
                'node-eventual/counter-sum',
                `${n.peerId} reads ${key} = ${JSON.stringify(got)}, acknowledged increments sum to ${expected}${open ? ` (unanswered: ${open.lo}..+${open.hi})` : ''}`,
              );
            }
          }
        }
      }
    },
    metrics() {
      let drift = 0;
      let repaired = 0;
      let incarnations = 0;
      let direct = 0;
      let fallbacks = 0;
      let torn = 0;
      let rotations = 0;
      for (const n of nodes()) {
        const c = n.eventualModule.namespace(NAMESPACE).counters;
        rotations += c.writerRotations;
        torn += c.tornRecords;
        drift += c.driftRejections;
        repaired += c.repairedEntries;
        incarnations += c.incarnations;
        direct += c.directGossip;
        fallbacks += c.meshFallbacks;
      }
      return {
        nodes: count,
        writes,
        reads,
        yjsEdits,
        acked: acked.length,
        partitions: nemesis.stats.partitions,
        crashes: nemesis.stats.crashes + offline + isolatedCrashes + midWriteCrashes,
        midWriteCrashes,
        pauses: nemesis.stats.pauses,
        clockJumps: nemesis.stats.clockJumps,
        driftRejections: drift,
        repairedEntries: repaired,
        tornRecords: torn,
        'guard.incarnation': incarnations,
        'guard.directFanout': direct,
        'guard.meshFallback': fallbacks,
        'guard.writerRotation': rotations,
      };
    },
  };
}

const LOSSY = { lossRate: 0.1, duplicateRate: 0.05, reorder: true, latency: { minMs: 1, meanMs: 8, maxMs: 120 } };

export const NODE_EVENTUAL_SCENARIOS: readonly Scenario[] = [
  nodeEventualScenario({
    name: 'node-eventual-partition',
    description: 'partitions of every kind in turn, light loss and reordering.',
    network: { lossRate: 0.02, reorder: true },
    nemesis: { partitions: PARTITION_KINDS },
  }),
  nodeEventualScenario({
    name: 'node-eventual-crash',
    description: 'crashes with restart from disk, torn tail writes, transient read errors.',
    network: { lossRate: 0.02, duplicateRate: 0.02 },
    nemesis: { crashes: true },
    disk: { tornWriteRate: 0.5, readErrorRate: 0.02 },
  }),
  nodeEventualScenario({
    name: 'node-eventual-isolated-crash',
    description:
      'a node is isolated, takes writes only it holds, crashes (torn tail writes), restarts from its disk, and rejoins; again and again.',
    network: { lossRate: 0.02 },
    nemesis: {},
    isolateThenCrash: true,
    disk: { tornWriteRate: 0.5, readErrorRate: 0.02 },
  }),
  nodeEventualScenario({
    name: 'node-eventual-chaos',
    description:
      'lossy network, partitions, crashes, pauses, clogs, clock offsets ±3 s and jumps ±3 s (inside the drift bound).',
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
  nodeEventualScenario({
    name: 'node-eventual-offline-ttl',
    description:
      'TTLs of 1–4 s (max TTL and tombstone grace 4 s, GC every 0.5 s); one node is down for 12 s, past every TTL and the grace period, then returns under a new replica id; light partitions.',
    network: { lossRate: 0.02 },
    nemesis: { partitions: ['symmetric', 'isolate'], durationMs: { min: 300, max: 1_500 } },
    maxTtlSeconds: 4,
    offlineMs: 12_000,
    safetyMs: 16_000,
  }),
  nodeEventualScenario({
    name: 'node-eventual-early-gossip',
    description:
      'gossipBeforeDurable: nodes crash 0–3 ms after issuing a write (its gossip sent, its batch in flight, torn tail writes), restart from disk under a new replica id, isolated, and write again; crashes and partitions besides.',
    network: { lossRate: 0.02, duplicateRate: 0.02 },
    nemesis: { crashes: true, partitions: ['symmetric', 'isolate'] },
    disk: { tornWriteRate: 0.5, readErrorRate: 0.02 },
    gossipBeforeDurable: true,
    crashMidWrite: true,
  }),
];

for (const scenario of NODE_EVENTUAL_SCENARIOS) registerScenario(scenario);
