/**
 * The partition test's body: five nodes (three Raft voters), one agent per
 * node, five tasks. Halfway through, the two voters' side is cut off from the
 * other three nodes for 20 s; the agents there lose their leases and the
 * others take their tasks over. After healing, every task must be finished,
 * no step counted twice, the progress counters converged, and Parley's own
 * checkers must pass. (A step whose commit timed out may go uncounted: the
 * agent counts at most once, never twice.)
 */
import { simulate } from '@parley/testing';

export const TASKS = ['t0', 't1', 't2', 't3', 't4'];

export function checkAgentAcrossPartition(startAgent, steps, options = {}) {
  return simulate({ nodes: 5, voters: 3, ...options }, async (cluster) => {
    const log = [];
    const start = Date.now();
    for (const [i, node] of cluster.nodes.entries()) startAgent(node, `agent-${i}`, { tasks: TASKS, log });
    await cluster.run('6s');

    cluster.partition([0, 1], [2, 3, 4]); // voters 0 and 1 keep a quorum; 2, 3 and 4 are cut off
    await cluster.run('20s');
    cluster.heal();
    await cluster.run('40s');

    // No step of any task was counted twice.
    for (const task of TASKS) {
      const counted = log.filter((e) => e.task === task).map((e) => e.step);
      const twice = counted.find((s, i) => counted.indexOf(s) !== i);
      if (twice !== undefined) {
        const who = log
          .filter((e) => e.task === task && e.step === twice)
          .map((e) => `${e.by} at t=${e.at - start} ms`);
        throw new Error(`task ${task}: step ${twice} was counted twice (${who.join(', ')})`);
      }
    }
    // Every task was finished (its lease state says so), and its counter holds no more than its steps.
    cluster.expectConverged('progress');
    for (const task of TASKS) {
      const lease = await cluster.nodes[0].strong('tasks').get(task);
      if (lease?.value?.state?.step !== steps)
        throw new Error(`task ${task} is not finished: ${JSON.stringify(lease?.value)}`);
      const counter = await cluster.nodes[0].eventual('progress').get(task);
      if (!(counter?.value <= steps))
        throw new Error(`progress of ${task} is ${counter?.value}, more than its ${steps} steps`);
    }
    cluster.expectLinearizable();
    cluster.expectFencing();
  });
}
