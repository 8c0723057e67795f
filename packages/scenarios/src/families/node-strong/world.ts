/**
 * `node-strong-*` world: the configuration of a run, the voters and non-member
 * nodes booted as NodeStrongHost processes with skewed, drifting clocks, the
 * record of what the members applied (first result per index, fence events,
 * acknowledged writes by index, deletes) that the checks read, and what every
 * scenario over it checks after each event and the faults it runs.
 */

import { type FenceEvent, InvariantRegistry, type RaftClusterView, registerRaftInvariants } from '@parley/check';
import {
  type ApplyOutput,
  type Command,
  type CommandResult,
  type CoordLimits,
  canonicalJson,
  type Operation,
} from '@parley/coord';
import type { PeerId } from '@parley/interface';
import type { NemesisOptions, Simulation } from '@parley/sim';
import { between, Nemesis, violation } from '@parley/sim';
import { appliedRecorder } from '../applied-record.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from '../raft/group.js';
import { NodeStrongHost } from './host.js';

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
  /** The current leader crashes every 1.5–3 s and restarts 0.5–2 s later (./leader-kill.ts). */
  leaderKills?: boolean;
  /** coord limits of the group (default coord's). */
  limits?: Partial<CoordLimits>;
  /** A node's bound on one call and on one forwarded attempt (default 3,000 and 1,000 ms). */
  callTimeoutMs?: number;
  attemptTimeoutMs?: number;
  /** Client sessions per node (default the node's, 16). */
  maxSessions?: number;
  /**
   * Half of the lock releases are pipelined (`pipelined: true`), each followed
   * at once by the owner's next acquire of the lock through the same node.
   */
  pipelinedReleases?: boolean;
  safetyMs?: number;
  livenessBoundMs?: number;
}

const TICK_MS = 100;
/** A node's bound on one call (forwarding and retries included). */
const CALL_TIMEOUT_MS = 3_000;
export const VERSION_KEY = 'sim-node';
export const ENTRY_KEYS = ['k0', 'k1'];

/** Whether the workload and faults still run (cleared on quiesce). */
export interface RunState {
  running: boolean;
}

/** The booted nodes and what the members applied. */
export interface NodeStrongWorld {
  readonly voters: PeerId[];
  readonly nodes: PeerId[];
  readonly app: (id: PeerId) => NodeStrongHost | undefined;
  readonly member: (id: PeerId) => NodeStrongHost['module']['replica'] | undefined;
  readonly fenceEvents: FenceEvent[];
  readonly writesAt: Map<number, { key: string; version: string; who: string }>;
  readonly versionIndex: Map<string, number>;
  readonly deletesAt: Map<string, number[]>;
  readonly agreement: string[];
  readonly stats: { applied: number; snapshotsInstalled: number };
  /** Calls `listener` for each command the first time its index is applied (with its output). */
  onFirstApply(listener: FirstApplyListener): void;
  /** Calls `listener` for each serializable or bounded read a member answers from its state. */
  onLocalRead(listener: LocalReadListener): void;
}

export type LocalReadListener = (host: PeerId, op: Operation, index: number, result: CommandResult) => void;

export type FirstApplyListener = (index: number, command: Command, out: ApplyOutput) => void;

export function bootNodeStrongWorld(
  sim: Simulation,
  config: NodeStrongScenarioConfig,
  state: RunState,
): NodeStrongWorld {
  const rng = sim.random;
  const voters: PeerId[] = Array.from({ length: config.voters }, (_, i) => `n${i + 1}`);
  const outsiders: PeerId[] = Array.from({ length: config.nonMembers }, (_, i) => `x${i + 1}`);
  const nodes = [...voters, ...outsiders];

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
  const stats = { applied: 0, snapshotsInstalled: 0 };

  const app = (id: PeerId): NodeStrongHost | undefined => {
    const h = sim.host<NodeStrongHost>(id);
    return h.state === 'down' ? undefined : h.app;
  };
  const member = (id: PeerId) => app(id)?.module.replica;

  const record = appliedRecorder({ firstApply, fenceEvents, seen, writesAt, versionIndex, deletesAt });
  const listeners: FirstApplyListener[] = [];
  const readListeners: LocalReadListener[] = [];
  const onFirstApply: FirstApplyListener = (index, command, out) => {
    record(index, command, out);
    for (const l of listeners) l(index, command, out);
  };

  const onApply = (host: PeerId, index: number, _term: number, command: Command | undefined, out: ApplyOutput) => {
    const text = canonicalJson(out);
    const prior = outputAt.get(index);
    if (prior === undefined) {
      outputAt.set(index, text);
      stats.applied++;
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
            callTimeoutMs: config.callTimeoutMs ?? CALL_TIMEOUT_MS,
            attemptTimeoutMs: config.attemptTimeoutMs ?? 1_000,
            ...(config.limits ? { limits: config.limits } : {}),
            ...(config.maxSessions ? { maxSessions: config.maxSessions } : {}),
            snapshotEveryEntries: config.snapshotEveryEntries ?? 40,
            keepEntries: config.keepEntries ?? 5,
            maxSnapshotChunkBytes: 4096,
          },
          onApply,
          onRestore: () => {
            if (state.running) stats.snapshotsInstalled++;
          },
          onLocalRead: (host, op, index, result) => {
            for (const l of readListeners) l(host, op, index, result);
          },
        }),
      {
        disk: voters.includes(id) ? config.disk : undefined,
        clock: { offsetMs: offsets[i] as number, driftPpm: drifts[i] as number },
      },
    );
  }

  return {
    voters,
    nodes,
    app,
    member,
    fenceEvents,
    writesAt,
    versionIndex,
    deletesAt,
    agreement,
    stats,
    onFirstApply: (listener) => listeners.push(listener),
    onLocalRead: (listener) => readListeners.push(listener),
  };
}

/**
 * The checks after every event that hold in every node-strong scenario: no
 * node's driver stopped, every member computed the same result at each index,
 * and Raft's invariants over the voters.
 */
export function watchNodeStrongWorld(sim: Simulation, world: NodeStrongWorld): void {
  const { voters, nodes, app, agreement } = world;
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
}

/** A run's faults, as startNodeStrongFaults started them. */
export interface NodeStrongFaults {
  /** `config.netNemesis` over every node. */
  readonly net: Nemesis;
  /** `config.voterNemesis` over the voters. */
  readonly voters: Nemesis;
  /** Stops the workload (`state.running`) and both nemeses. */
  quiesce(): void;
}

/**
 * watchNodeStrongWorld's checks, then the faults of `config`: the network
 * nemesis over every node, the voter nemesis, the network's loss and latency.
 * Called once the clients are started: the seed's draws follow that order.
 */
export function startNodeStrongFaults(
  sim: Simulation,
  config: NodeStrongScenarioConfig,
  world: NodeStrongWorld,
  state: RunState,
): NodeStrongFaults {
  watchNodeStrongWorld(sim, world);
  const net = new Nemesis(sim, world.nodes, config.netNemesis).start();
  const voters = new Nemesis(sim, world.voters, config.voterNemesis).start();
  if (config.network) sim.network.configure(config.network);
  return {
    net,
    voters,
    quiesce() {
      state.running = false;
      net.stop();
      voters.stop();
    },
  };
}

/** Whether a leader of the highest term leads every voter, each caught up with it. */
export function nodeStrongConverged(world: NodeStrongWorld): boolean {
  const leader = highestTermLeader(world.voters, world.app);
  return leader !== undefined && raftGroupConverged(leader, world.voters, world.app);
}
