/**
 * `raft-*`: a Raft group of 3 or 5 voters (@parley/raft's driver over the
 * simulated transport, disk and timers) under faults. Each member runs a
 * client that proposes unique values under a client session (retrying the
 * same sequence number until it sees it applied); the nemesis injects the
 * scenario's faults during the safety phase; some scenarios also change the
 * membership or force InstallSnapshot transfers while faults are on.
 *
 * Checked after every event (the invariant hook of ./check/raft-invariants):
 * at most one leader per term, log matching, leader completeness, state
 * machine safety; plus no value applied twice (sessions) and identical
 * applied prefixes. Liveness: after healing, one leader with an entry of its
 * own term committed, and every member of its configuration caught up,
 * within the bound. Final check: every acknowledged value (applied on its
 * proposer) is applied by every member, at the same index (no committed entry lost).
 */

import { InvariantRegistry, type RaftClusterView, registerRaftInvariants } from '@parley/check';
import type { PeerId } from '@parley/interface';
import { between, Nemesis, type NemesisOptions, PARTITION_KINDS, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from './group.js';
import { RaftGuardWatch } from './guards.js';
import { RaftHost } from './host.js';
import { LeaderReactiveNemesis, type LeaderReactiveOptions } from './leader-reactive-nemesis.js';
import { PersistProbe } from './persist-probe.js';

export interface RaftScenarioConfig {
  name: string;
  description: string;
  voters: 3 | 5;
  network?: {
    lossRate?: number;
    duplicateRate?: number;
    reorder?: boolean;
    latency?: { minMs: number; meanMs: number; maxMs: number };
  };
  nemesis: NemesisOptions;
  /** Cuts off leaders at the moments they are elected or commit (./leader-reactive-nemesis.ts). */
  reactive?: LeaderReactiveOptions;
  /** Two spare hosts join as learners, get promoted, and voters get removed while faults are on. */
  membership?: boolean;
  /** Snapshot cadence (entries) and chunk size: small values force chunked InstallSnapshot. */
  snapshotEveryEntries?: number;
  keepEntries?: number;
  maxSnapshotChunkBytes?: number;
  disk?: { tornWriteRate?: number };
  /** Largest batch of entries per append message (1: one entry per message). */
  maxSizePerMsgBytes?: number;
  /** Slow disks: every Raft log write takes this long to become durable. Default 1–4 ms. */
  writeLatencyMs?: { min: number; max: number };
  /** Probability that a member is crashed right after sending a reply while one of its writes is in flight. */
  crashOnReplyRate?: number;
  safetyMs?: number;
  livenessBoundMs?: number;
}

/** One Raft tick: heartbeats every tick, elections after 10–20 ticks (1–2 s). */
const TICK_MS = 100;

export function raftScenario(config: RaftScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? 4_000,
    livenessBoundMs: config.livenessBoundMs ?? 15_000,
    setup: (sim) => setupRaft(sim, config),
  };
}

function setupRaft(sim: Simulation, config: RaftScenarioConfig): ScenarioRun {
  const rng = sim.random;
  const voters: PeerId[] = Array.from({ length: config.voters }, (_, i) => `n${i + 1}`);
  const spares: PeerId[] = config.membership ? [`n${config.voters + 1}`, `n${config.voters + 2}`] : [];
  const ids = [...voters, ...spares];
  let running = true;
  let proposals = 0;
  let retries = 0;
  let membershipChanges = 0;
  /** value → index where it was first applied (by anyone). */
  const appliedAt = new Map<string, number>();
  /** Values acknowledged to their client (applied on the proposing host). */
  const acked = new Set<string>();
  /** Per host: the value its client waits for. */
  const outstanding = new Map<PeerId, { clientId: string; seq: number; value: string; sentAt: number }>();
  /** Messages sent before the disk held what they promise (persist before send). */
  const persistBreaches: string[] = [];
  let crashesOnReply = 0;
  /** Disagreements seen by the apply hook (reported by an invariant after the event). */
  const applyViolations: string[] = [];

  const onApply = (host: PeerId, index: number, value: string) => {
    const at = appliedAt.get(value);
    if (at === undefined) appliedAt.set(value, index);
    else if (at !== index && applyViolations.length < 10) {
      applyViolations.push(`${host} applied ${value} at index ${index}, another member at ${at}`);
    }
    const o = outstanding.get(host);
    if (o && o.value === value) {
      acked.add(value);
      outstanding.delete(host);
    }
  };

  for (const id of ids) {
    sim.addHost(
      id,
      async (ctx) => {
        const host = await RaftHost.boot(ctx, {
          voters,
          joining: spares.includes(id),
          tickMs: TICK_MS,
          snapshotEveryEntries: config.snapshotEveryEntries ?? 25,
          keepEntries: config.keepEntries ?? 5,
          maxSnapshotChunkBytes: config.maxSnapshotChunkBytes ?? 1024,
          ...(config.maxSizePerMsgBytes === undefined ? {} : { maxSizePerMsgBytes: config.maxSizePerMsgBytes }),
          probe: (c, disk) =>
            new PersistProbe(c.id, disk, {
              breach: (message) => {
                if (persistBreaches.length < 10) persistBreaches.push(message);
              },
              replyWithWriteInFlight: () => {
                const rate = config.crashOnReplyRate ?? 0;
                if (rate > 0 && running && rng.int(1_000_000) < rate * 1_000_000) {
                  sim.schedule(0, () => {
                    if (sim.host(c.id).generation === c.generation && nemesis.crash(c.id)) crashesOnReply++;
                  });
                }
              },
            }),
          onApply,
        });
        startClient(host, ctx.generation);
        return host;
      },
      { disk: { ...config.disk, ...(config.writeLatencyMs ? { writeLatencyMs: config.writeLatencyMs } : {}) } },
    );
  }

  function startClient(host: RaftHost, generation: number): void {
    const id = host.ctx.id;
    const clientId = `${id}#${generation}`;
    let seq = 0;
    outstanding.delete(id); // a crash abandoned the previous generation's request (indeterminate)
    const loop = () => {
      host.ctx.scheduler.after(between(rng, 80, 300), () => {
        if (!running) return;
        const o = outstanding.get(id);
        const now = sim.nowMs();
        if (!o) {
          seq++;
          const value = `${clientId}:${seq}`;
          outstanding.set(id, { clientId, seq, value, sentAt: now });
          proposals++;
          host.propose(clientId, seq, value);
        } else if (o.clientId === clientId && now - o.sentAt > 1_500) {
          // No answer: retry the same (client, seq); the session makes it apply at most once.
          o.sentAt = now;
          retries++;
          host.propose(o.clientId, o.seq, o.value);
        }
        loop();
      });
    };
    loop();
  }

  const app = (id: PeerId): RaftHost | undefined => {
    const h = sim.host<RaftHost>(id);
    return h.state === 'down' ? undefined : h.app;
  };
  const leader = (): RaftHost | undefined => highestTermLeader(ids, app);

  // Continuous invariants through the checkers' hook.
  const registry = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(registry);
  registry.registerInvariant(
    'raft/applied-value-agreement',
    () => applyViolations.slice(),
    'a client value is applied at the same index everywhere, at most once',
  );
  registry.registerInvariant(
    'raft/persist-before-send',
    () => persistBreaches.slice(),
    'an acknowledged index and a granted vote are on the sender’s disk when the message leaves',
  );
  registry.registerInvariant(
    'raft/driver-healthy',
    (view) => {
      void view;
      for (const id of ids) {
        const a = app(id);
        if (a?.fatal !== undefined) return `${id}: driver stopped: ${String(a.fatal)}`;
      }
      return undefined;
    },
    'no storage or state machine error stops a live member',
  );
  const view = (): RaftClusterView => raftClusterView(ids, app);
  sim.invariant('raft', () => registry.assertInvariants(view()));
  const guards = new RaftGuardWatch();
  sim.invariant('raft/guards', () => guards.observe(ids, app));

  const nemesis = new Nemesis(sim, ids, {
    ...config.nemesis,
    leader: () => leader()?.ctx.id,
  }).start();
  if (config.network) sim.network.configure(config.network);
  const reactive = config.reactive ? new LeaderReactiveNemesis(sim, ids, app, config.reactive).start() : undefined;

  // Membership changes while the faults run: learners join, get promoted, voters leave.
  if (config.membership) {
    const plan: { type: 'addLearner' | 'addVoter' | 'removeNode'; node: PeerId }[] = [
      { type: 'addLearner', node: spares[0] as PeerId },
      { type: 'addVoter', node: spares[0] as PeerId },
      { type: 'addLearner', node: spares[1] as PeerId },
      { type: 'removeNode', node: voters[rng.int(voters.length)] as PeerId },
      { type: 'addVoter', node: spares[1] as PeerId },
    ];
    let step = 0;
    const next = () => {
      sim.schedule(between(rng, 400, 1_200), () => {
        if (!running || step >= plan.length) return;
        const l = leader();
        const change = plan[step] as (typeof plan)[number];
        if (l && change.node !== l.ctx.id && l.proposeConfChange(change)) {
          step++;
          membershipChanges++;
        }
        next();
      });
    };
    next();
  }

  let lastLeader: RaftHost | undefined;
  return {
    livenessDetail() {
      const l = leader();
      if (!l) return 'no leader';
      const raft = l.driver.probe;
      const out: string[] = [];
      for (const id of raft.voters) {
        if (id === l.ctx.id) continue;
        const match = raft.progress.get(id)?.match ?? 0;
        const f = app(id);
        const disk = f?.probe?.durableLast;
        if (disk !== undefined && match > disk) {
          out.push(`leader ${l.ctx.id} believes follower ${id} has ${match}, follower's disk has ${disk}`);
        } else if (f && f.driver.appliedIndex < raft.committed) {
          out.push(
            `follower ${id} applied ${f.driver.appliedIndex} of ${raft.committed} (leader ${l.ctx.id} believes it has ${match})`,
          );
        }
      }
      return out.join('; ') || undefined;
    },
    quiesce() {
      running = false;
      nemesis.stop();
      reactive?.stop();
    },
    converged() {
      const l = leader();
      if (!l) return false;
      const st = l.driver.status();
      if (!raftGroupConverged(l, [...st.voters, ...st.learners], app)) return false;
      lastLeader = l;
      return true;
    },
    check() {
      const l = lastLeader;
      if (!l) throw violation('raft/liveness', 'no leader after convergence');
      const st = l.driver.status();
      const members = [...st.voters, ...st.learners];
      const reference = l.sm.values;
      for (const id of members) {
        const a = app(id);
        if (!a) continue;
        const vals = a.sm.values;
        // Identical applied sequences (a member restored from a snapshot holds the same list).
        const n = Math.min(vals.length, reference.length);
        for (let i = 0; i < n; i++) {
          const x = vals[i] as [number, string];
          const y = reference[i] as [number, string];
          if (x[0] !== y[0] || x[1] !== y[1]) {
            throw violation('raft/state-machine-safety', `${id} and ${l.ctx.id} differ at applied position ${i}`);
          }
        }
        const seen = new Set<string>();
        for (const [, v] of vals) {
          if (seen.has(v)) throw violation('raft/at-most-once', `${id} applied ${v} twice`);
          seen.add(v);
        }
        for (const v of acked) {
          if (!seen.has(v)) throw violation('raft/no-committed-entry-lost', `${id} lacks acknowledged value ${v}`);
        }
      }
    },
    metrics() {
      const snapshotsInstalled = ids.reduce((n, id) => n + (app(id)?.sm.restores ?? 0), 0);
      return {
        voters: config.voters,
        proposals,
        retries,
        acked: acked.size,
        membershipChanges,
        partitions: nemesis.stats.partitions,
        crashes: nemesis.stats.crashes,
        pauses: nemesis.stats.pauses,
        snapshotsInstalled,
        'guard.oldTermCommitByCount': guards.oldTermCommitByCount,
        'guard.installSnapshot': snapshotsInstalled,
        repliesWithWriteInFlight: ids.reduce((n, id) => n + (app(id)?.probe?.repliesWithWriteInFlight ?? 0), 0),
        crashesOnReply,
        ...(reactive === undefined ? {} : { reactiveCuts: reactive.stats.cuts }),
      };
    },
  };
}

const LOSSY = { lossRate: 0.1, duplicateRate: 0.05, reorder: true, latency: { minMs: 1, meanMs: 8, maxMs: 120 } };

export const RAFT_SCENARIOS: readonly Scenario[] = [
  ...([3, 5] as const).flatMap((v) => [
    raftScenario({
      name: `raft-${v}-partition`,
      description: `${v} voters; partitions of every kind (symmetric, one-way, isolate, majority, bridge), drawn per fault; 2% loss with reordering.`,
      voters: v,
      network: { lossRate: 0.02, reorder: true },
      nemesis: { partitions: PARTITION_KINDS },
    }),
    raftScenario({
      name: `raft-${v}-lossy`,
      description: `${v} voters; loss 10%, duplication 5%, reordering and a latency tail, with clogged links.`,
      voters: v,
      network: LOSSY,
      nemesis: { clogs: true },
    }),
    raftScenario({
      name: `raft-${v}-crash`,
      description: `${v} voters; crashes that lose unsynced writes (torn tails), restart from disk; a quorum stays up.`,
      voters: v,
      network: { lossRate: 0.02, duplicateRate: 0.02 },
      nemesis: { crashes: true, maxDown: v === 3 ? 1 : 2 },
      disk: { tornWriteRate: 0.5 },
    }),
    raftScenario({
      name: `raft-${v}-pause`,
      description: `${v} voters; paused processes (a paused leader wakes up deposed) and clock jumps.`,
      voters: v,
      network: { lossRate: 0.02 },
      nemesis: { pauses: true, clockJumps: true, maxClockJumpMs: 2_000 },
    }),
  ]),
  raftScenario({
    name: 'raft-3-membership',
    description:
      '3 voters plus 2 joiners: learners added, promoted, a voter removed, under partitions, crashes and loss.',
    voters: 3,
    membership: true,
    network: { lossRate: 0.05, duplicateRate: 0.02, reorder: true },
    nemesis: { partitions: PARTITION_KINDS, crashes: true, maxDown: 1 },
    safetyMs: 6_000,
  }),
  raftScenario({
    name: 'raft-3-snapshot',
    description:
      '3 voters; snapshot every 5 entries, 64-byte chunks: lagging members catch up by chunked InstallSnapshot under faults.',
    voters: 3,
    snapshotEveryEntries: 5,
    keepEntries: 0,
    maxSnapshotChunkBytes: 64,
    network: LOSSY,
    nemesis: { partitions: PARTITION_KINDS, crashes: true, maxDown: 1 },
  }),
  raftScenario({
    name: 'raft-5-leader-churn',
    description:
      '5 voters, one entry per append; the nemesis keeps cutting off or crashing the current leader (with a follower half of the time) in short bursts: histories like Figure 8 of the Raft paper.',
    voters: 5,
    maxSizePerMsgBytes: 1,
    network: { lossRate: 0.02 },
    nemesis: {
      partitions: ['leader', 'leader', 'leader', 'majority'],
      crashes: true,
      crashLeader: true,
      maxDown: 2,
      gapMs: { min: 100, max: 800 },
      durationMs: { min: 200, max: 2_500 },
    },
    safetyMs: 8_000,
  }),
  raftScenario({
    name: 'raft-5-figure8-random',
    description:
      '5 voters, one entry per append; a leader-reactive nemesis: by coins drawn from the seed, a member is cut off the moment it becomes leader (35%), and a leader, alone or with its closest follower, the moment one of its entries reaches a quorum (80%), reconnecting the rest; histories like Figure 8 of the Raft paper, unscripted.',
    voters: 5,
    maxSizePerMsgBytes: 1,
    network: { lossRate: 0.01 },
    nemesis: {},
    reactive: { cutNewLeader: 0.35, cutOnQuorum: 0.8, durationMs: { min: 1_500, max: 4_000 } },
    safetyMs: 30_000,
  }),
  raftScenario({
    name: 'raft-3-slow-disk',
    description:
      '3 voters; slow disks (writes durable after 5–50 ms); a member is crashed right after it sends a reply while a write is in flight (30%), plus random crashes; every acknowledged index and granted vote must be on the sender’s disk.',
    voters: 3,
    network: { lossRate: 0.02 },
    writeLatencyMs: { min: 5, max: 50 },
    crashOnReplyRate: 0.3,
    nemesis: { crashes: true, maxDown: 1 },
  }),
  raftScenario({
    name: 'raft-5-slow-disk',
    description:
      '5 voters; slow disks (5–50 ms writes), crashes right after a reply with a write in flight (30%), leader cut-offs; persist before send checked on every message.',
    voters: 5,
    network: { lossRate: 0.02, reorder: true },
    writeLatencyMs: { min: 5, max: 50 },
    crashOnReplyRate: 0.3,
    nemesis: { crashes: true, partitions: ['leader', 'isolate'], maxDown: 2 },
  }),
  raftScenario({
    name: 'raft-5-chaos',
    description:
      '5 voters; everything at once: lossy network, partitions of every kind, crashes, pauses, clogs, snapshots.',
    voters: 5,
    snapshotEveryEntries: 10,
    keepEntries: 2,
    maxSnapshotChunkBytes: 128,
    network: LOSSY,
    nemesis: { partitions: PARTITION_KINDS, crashes: true, pauses: true, clogs: true, maxDown: 2 },
    disk: { tornWriteRate: 0.5 },
  }),
];

for (const s of RAFT_SCENARIOS) registerScenario(s);
