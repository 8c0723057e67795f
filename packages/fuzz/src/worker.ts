/**
 * The fuzzing loop, run in a worker thread so the CLI's main thread can watch
 * it: it publishes the iteration it is on in shared memory, and the main
 * thread reports a hang (no progress for a minute) or a blown heap with the
 * decoder, seed and iteration that caused it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { emptyStats, runTarget, type TargetStats } from './runner.js';
import { TARGETS } from './targets/index.js';

export interface WorkItem {
  decoder: string;
  start: number;
  iterations: number;
}

export interface WorkerInput {
  seed: number;
  items: WorkItem[];
  /** [item index, iteration mod 2^31, heartbeat] */
  progress: SharedArrayBuffer;
}

export type WorkerMessage =
  | { type: 'failure'; failure: import('./runner.js').Failure }
  | { type: 'stats'; item: number; stats: TargetStats };

const input = workerData as WorkerInput;
const progress = new Int32Array(input.progress);
const port = parentPort;
if (port === null) throw new Error('worker.js runs as a worker thread');

for (let k = 0; k < input.items.length; k++) {
  const item = input.items[k] as WorkItem;
  const target = TARGETS.find((t) => t.name === item.decoder);
  if (target === undefined) throw new Error(`unknown decoder ${item.decoder}`);
  Atomics.store(progress, 0, k);
  const stats = runTarget(
    target,
    {
      seed: input.seed,
      start: item.start,
      iterations: item.iterations,
      onIteration: (i) => {
        Atomics.store(progress, 1, i);
        Atomics.add(progress, 2, 1);
      },
      onFailure: (failure) => port.postMessage({ type: 'failure', failure } satisfies WorkerMessage),
    },
    emptyStats(target.name),
  );
  port.postMessage({ type: 'stats', item: k, stats } satisfies WorkerMessage);
}
