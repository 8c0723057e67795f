/**
 * `queue-strong-*`: the fenced work queue (`strong(ns).queue(name)`,
 * docs/queue.md) on the real node's strong module, 3 voters and 2 non-member
 * nodes, with workers that crash holding a task, pause past their lease's TTL
 * and complete late, and call through nodes that are partitioned, crashed and
 * paused (./queue-workload.ts).
 *
 * Liveness: once the faults stop, every enqueued task must be done within the
 * bound (a task whose holder crashed is taken over after its TTL: none is
 * stranded). Checked at the end (./queue-check.ts): each task completed
 * exactly once, by the attempt holding its last fence; enqueues of a key all
 * told the same task; no unexpected error; Raft's invariants and replica
 * agreement after every event.
 */

import type { QueueTaskView } from '@parley/node';
import { PARTITION_KINDS, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { checkQueue, type FinalTask } from './queue-check.js';
import { startQueueWorkload } from './queue-workload.js';
import {
  bootNodeStrongWorld,
  type NodeStrongScenarioConfig,
  nodeStrongConverged,
  type RunState,
  startNodeStrongFaults,
} from './world.js';

interface QueueScenarioConfig extends NodeStrongScenarioConfig {
  tasks: number;
}

/** How often the liveness phase reads the queue's tasks. */
const MONITOR_MS = 500;
/**
 * Once the faults stopped, a task held by nobody alive is taken over within this long
 * after its lease's deadline (or after the faults stopped, if later): TTL plus this bound.
 */
export const STRANDED_BOUND_MS = 10_000;

function queueScenario(config: QueueScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? 20_000,
    livenessBoundMs: config.livenessBoundMs ?? 30_000,
    setup: (sim) => setupQueue(sim, config),
  };
}

async function listAll(queue: NonNullable<ReturnType<ReturnType<typeof startQueueWorkload>['queueAt']>>) {
  const all: QueueTaskView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const r = await queue.list({ limit: 1000, ...(cursor ? { cursor } : {}) });
    all.push(...r.items);
    if (r.nextCursor === null) return all;
    cursor = r.nextCursor;
  }
  return all;
}

function setupQueue(sim: Simulation, config: QueueScenarioConfig): ScenarioRun {
  const state: RunState = { running: true };
  const world = bootNodeStrongWorld(sim, config, state);
  const { nodes, app } = world;
  const workload = startQueueWorkload(sim, { tasks: config.tasks, workers: config.clients }, world, state);
  const faults = startNodeStrongFaults(sim, config, world, state);

  // --- the liveness phase's view of the queue ---------------------------------------------
  let seen: QueueTaskView[] = [];
  let monitoring = false;
  let quiescedAt = 0;
  const monitor = () => {
    sim.schedule(MONITOR_MS, () => {
      const q = workload.queueAt();
      if (q) {
        listAll(q).then(
          (tasks) => {
            seen = tasks;
          },
          () => {},
        );
      }
      monitor();
    });
  };
  // No task stranded: a lease that ran out is taken over (by the strong side's clock, within the skew).
  /** The strong side's time: a live node's clock (deadlines are on it; the nodes' clocks are within the skew). */
  const clockNow = () => {
    for (const id of nodes) {
      const a = app(id);
      if (a) return a.nodeCtx.clock.nowMs();
    }
    return undefined;
  };
  sim.invariant('queue', () => {
    if (!monitoring) return;
    const now = clockNow();
    if (now === undefined) return;
    for (const t of seen) {
      if (t.status !== 'taken') continue;
      const due = Math.max(t.deadlineAt, quiescedAt) + STRANDED_BOUND_MS;
      if (now > due) {
        throw violation(
          'queue/stranded',
          `task ${t.id} still taken by ${t.holder} ${now - t.deadlineAt} ms after its lease's deadline, ${now - quiescedAt} ms after the faults stopped`,
        );
      }
    }
  });
  const allDone = () => {
    if (!workload.producerDone()) return false;
    const status = new Map(seen.map((t) => [t.id, t.status]));
    return workload.enqueued.every((e) => status.get(e.id) === 'done');
  };
  let checked = { tasks: 0, completions: 0 };

  return {
    quiesce() {
      faults.quiesce();
      if (!monitoring) {
        monitoring = true;
        quiescedAt = clockNow() ?? 0;
        monitor();
      }
    },
    converged: () => nodeStrongConverged(world) && allDone(),
    livenessDetail() {
      const status = new Map(seen.map((t) => [t.id, t]));
      const open = workload.enqueued
        .map((e) => status.get(e.id))
        .filter((t) => t?.status !== 'done')
        .slice(0, 5)
        .map((t) => (t ? `${t.id}: ${t.status} by ${t.holder} until ${t.deadlineAt} (now ${clockNow()})` : 'absent'));
      return `producer done: ${workload.producerDone()}; not done: ${open.join('; ')}`;
    },
    async check() {
      if (workload.unexpected.length > 0) throw violation('queue/unexpected-error', workload.unexpected.join('; '));
      const q = workload.queueAt();
      if (!q) throw violation('queue/not-done', 'no node is up to read the queue');
      // The read runs on simulated time: step the simulation until it answers.
      let listed: QueueTaskView[] | undefined;
      let error: unknown;
      listAll(q).then(
        (tasks) => {
          listed = tasks;
        },
        (err) => {
          error = err ?? 'failed';
        },
      );
      await sim.runUntil(() => listed !== undefined || error !== undefined, 10_000);
      if (listed === undefined)
        throw violation('queue/not-done', `the final read failed: ${String(error ?? 'no answer')}`);
      const final: FinalTask[] = listed.map((t) => ({
        id: t.id,
        status: t.status,
        fence: t.fence,
        result: t.result,
      }));
      const r = checkQueue({ enqueued: workload.enqueued, completes: workload.completes, final });
      const first = r.violations[0];
      if (first)
        throw violation(
          `queue/${first.type}`,
          r.violations
            .slice(0, 3)
            .map((v) => v.detail)
            .join('; '),
        );
      checked = { tasks: r.tasks, completions: r.completions };
    },
    metrics() {
      return {
        ...workload.stats,
        tasksChecked: checked.tasks,
        completionsChecked: checked.completions,
        partitions: faults.net.stats.partitions,
        crashes: faults.voters.stats.crashes,
        pauses: faults.voters.stats.pauses,
      };
    },
  };
}

export const QUEUE_STRONG_SCENARIOS: readonly Scenario[] = [
  queueScenario({
    name: 'queue-strong',
    description:
      '3 voters + 2 non-members; a producer enqueues 40 tasks (every fourth twice under its key), 5 workers take them with 2 s leases through any node and complete, fail, crash holding one, or pause past the TTL and complete late; partitions over every node, voter crashes and pauses, 2% loss; every task done exactly once by its last attempt, none stranded after the faults end.',
    voters: 3,
    nonMembers: 2,
    clients: 5,
    tasks: 40,
    network: { lossRate: 0.02, reorder: true },
    netNemesis: { partitions: PARTITION_KINDS },
    voterNemesis: { crashes: true, pauses: true, maxDown: 1 },
    skewMs: 100,
  }),
];

for (const s of QUEUE_STRONG_SCENARIOS) registerScenario(s);
