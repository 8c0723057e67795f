/**
 * A worker thread of a parallel sweep: receives `{ index, scenario, seed }`
 * tasks, runs them, and posts each `RunResult` back (without its trace).
 * Every run is a pure function of (scenario, seed), so which worker runs it
 * does not change its result.
 */
import { parentPort } from 'node:worker_threads';
import './families/index.js';
import { listScenarios, runScenario } from './registry.js';

export interface SweepTask {
  index: number;
  scenario: string;
  seed: number;
}

const port = parentPort;
if (port) {
  const byName = new Map(listScenarios().map((s) => [s.name, s]));
  port.on('message', (task: SweepTask | null) => {
    if (task === null) {
      port.close();
      return;
    }
    const scenario = byName.get(task.scenario);
    if (!scenario) throw new Error(`unknown scenario ${task.scenario}`);
    void runScenario(scenario, task.seed).then((result) =>
      port.postMessage({ index: task.index, result: { ...result, trace: [] } }),
    );
  });
}
