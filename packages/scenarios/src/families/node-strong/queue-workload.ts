/**
 * `queue-strong` workload: one producer enqueues tasks (each under a key,
 * some twice) and workers take them through any live node. A worker does the
 * task and completes it, fails it, crashes holding it (never heard of again:
 * its next incarnation is another holder), or pauses past its lease's TTL
 * without a heartbeat and then completes it anyway — refused once another
 * worker took it over. Every enqueue and complete answer is recorded for the
 * checker (./queue-check.ts). After the faults stop, workers only do tasks.
 */

import { isParleyError, type PeerId } from '@parley/interface';
import type { StrongQueue } from '@parley/node';
import type { Simulation } from '@parley/sim';
import { between } from '@parley/sim';
import type { CompleteCall } from './queue-check.js';
import type { NodeStrongWorld, RunState } from './world.js';

export const QUEUE_NAMESPACE = 'work';
export const QUEUE_NAME = 'jobs';
/** Attempts allowed: high enough that no task is dead-lettered by the faults alone. */
export const QUEUE_MAX_ATTEMPTS = 100;
/** Lease TTL of a take, seconds. */
export const TASK_TTL_S = 2;
const HEARTBEAT_MS = 600;
/** A call through a node that crashed is never answered: the caller gives up after this long. */
const GIVE_UP_MS = 12_000;

class GaveUp extends Error {
  readonly code = 'gave-up';
}

export interface QueueWorkloadConfig {
  tasks: number;
  workers: number;
}

export interface QueueWorkload {
  readonly enqueued: Array<{ key: string; id: string }>;
  readonly completes: CompleteCall[];
  readonly unexpected: string[];
  readonly stats: {
    enqueues: number;
    duplicates: number;
    takes: number;
    completed: number;
    refused: number;
    failed: number;
    crashed: number;
    paused: number;
  };
  /** Whether the producer has enqueued every task (each answered ok once). */
  producerDone(): boolean;
  /** A queue handle through a live node, or undefined when none is up. */
  queueAt(): StrongQueue | undefined;
}

/** Codes a queue call may end with under faults: indeterminate ones, and the fenced refusals. */
const EXPECTED = new Set([
  'timeout',
  'unavailable',
  'not_leader',
  'closed',
  'outcome_unknown',
  'lease_lost',
  'lock_held',
  'version_mismatch',
  'key_already_exists',
  'gave-up',
]);

export function startQueueWorkload(
  sim: Simulation,
  config: QueueWorkloadConfig,
  world: NodeStrongWorld,
  state: RunState,
): QueueWorkload {
  const rng = sim.random;
  const { nodes, app } = world;
  const enqueued: Array<{ key: string; id: string }> = [];
  const completes: CompleteCall[] = [];
  const unexpected: string[] = [];
  const stats = { enqueues: 0, duplicates: 0, takes: 0, completed: 0, refused: 0, failed: 0, crashed: 0, paused: 0 };
  const sleep = (ms: number) => new Promise<void>((resolve) => sim.schedule(ms, resolve));
  /** `p`, or a GaveUp after GIVE_UP_MS of simulated time. */
  const bounded = <T>(p: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      sim.schedule(GIVE_UP_MS, () => reject(new GaveUp()));
      p.then(resolve, reject);
    });

  const queueAt = (): StrongQueue | undefined => {
    const live = nodes.filter((n) => sim.host(n).state === 'up' && app(n) !== undefined);
    if (live.length === 0) return undefined;
    const node = app(live[rng.int(live.length)] as PeerId);
    return node?.module.strong(QUEUE_NAMESPACE).queue(QUEUE_NAME, { maxAttempts: QUEUE_MAX_ATTEMPTS });
  };
  const note = (what: string, err: unknown) => {
    const code = isParleyError(err) ? err.code : err instanceof GaveUp ? err.code : `crash: ${String(err)}`;
    if (!EXPECTED.has(code) && unexpected.length < 10) unexpected.push(`${what}: ${code}`);
    return code;
  };

  // --- the producer ---------------------------------------------------------------------------
  let produced = 0;
  const producer = async () => {
    for (let n = 0; n < config.tasks; n++) {
      const key = `task-${n}`;
      const copies = n % 4 === 0 ? 2 : 1; // every fourth task is enqueued twice
      for (let copy = 0; copy < copies; copy++) {
        for (;;) {
          const q = queueAt();
          if (q) {
            stats.enqueues++;
            try {
              const r = await bounded(q.enqueue({ n }, { key }));
              enqueued.push({ key, id: r.id });
              if (!r.created) stats.duplicates++;
              break;
            } catch (err) {
              note(`enqueue ${key}`, err); // retried with the same key: the claim keeps it one task
            }
          }
          await sleep(between(rng, 50, 300));
        }
        await sleep(between(rng, 10, 100));
      }
      produced++;
    }
  };

  // --- the workers ------------------------------------------------------------------------------
  const worker = async (w: number) => {
    for (let incarnation = 0; ; ) {
      const holder = `w${w}.${incarnation}`;
      const q = queueAt();
      if (!q) {
        await sleep(200);
        continue;
      }
      let task: Awaited<ReturnType<StrongQueue['take']>>;
      try {
        task = await bounded(q.take({ holder, ttl: TASK_TTL_S }));
      } catch (err) {
        note('take', err);
        await sleep(between(rng, 50, 300));
        continue;
      }
      if (!task) {
        if (!state.running && produced >= config.tasks) await sleep(500);
        else await sleep(between(rng, 100, 400));
        continue;
      }
      stats.takes++;
      const roll = state.running ? rng.int(100) : 0;
      if (roll >= 80) {
        // Crashed holding it: this incarnation never calls again.
        stats.crashed++;
        incarnation++;
        continue;
      }
      if (roll >= 60) {
        // Paused past its TTL, no heartbeat; then it completes as if nothing happened.
        stats.paused++;
        await sleep(TASK_TTL_S * 1000 + between(rng, 200, 3_000));
      } else if (roll >= 50) {
        stats.failed++;
        await bounded(task.fail('flaky', rng.int(2) === 0 ? {} : { retryAfter: 1 })).catch((err) => note('fail', err));
        continue;
      } else {
        // Works a while, heartbeating.
        const until = sim.nowMs() + between(rng, 100, 1_500);
        while (sim.nowMs() < until) {
          await sleep(Math.min(HEARTBEAT_MS, Math.max(1, until - sim.nowMs())));
          if (sim.nowMs() < until) await bounded(task.heartbeat()).catch((err) => note('heartbeat', err));
        }
      }
      const call: CompleteCall = { id: task.id, holder, fence: task.fence, ok: false };
      try {
        await bounded(task.complete({ by: holder, fence: task.fence }));
        call.ok = true;
        stats.completed++;
      } catch (err) {
        call.code = note('complete', err);
        if (call.code === 'lease_lost') stats.refused++;
      }
      completes.push(call);
    }
  };

  void producer();
  for (let w = 0; w < config.workers; w++) void worker(w);
  return { enqueued, completes, unexpected, stats, producerDone: () => produced >= config.tasks, queueAt };
}
