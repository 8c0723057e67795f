/**
 * A task-claiming agent: it takes a task with a lease (`strong('tasks').lease`),
 * works it step by step, commits each step in the lease's state (a write the
 * cluster refuses once the lease is lost: `lease_lost`), and only after a
 * committed step counts it in an eventual progress counter. It renews the
 * lease while it works and drops the task the moment a write or renewal fails.
 *
 * It uses the node API, `setTimeout` and `Date` like any agent; the test runs
 * it unchanged on simulated nodes.
 */

export const STEPS = 30;
const STEP_MS = 500;
const TTL_SECONDS = 3;

/** Starts the agent `name` on `node` over `tasks`; `log` receives every step it counts. */
export function startAgent(node, name, { tasks, log }) {
  const ns = node.strong('tasks');
  const progress = node.eventual('progress');
  let lease;
  let step = 0;
  let lastRenew = 0;
  const finished = new Set();

  const tick = async () => {
    try {
      if (lease === undefined) {
        for (const task of tasks) {
          if (finished.has(task)) continue;
          try {
            const l = await ns.lease(task, { ttl: TTL_SECONDS, holder: name });
            const done = l.view.state?.step ?? 0;
            if (done >= STEPS) {
              finished.add(task);
              await l.release(l.view.state);
              continue;
            }
            lease = l;
            step = done;
            lastRenew = Date.now();
            break;
          } catch (err) {
            if (err?.code !== 'lock_held') throw err;
          }
        }
      } else {
        if (Date.now() - lastRenew >= 1_000) {
          await lease.renew(TTL_SECONDS);
          lastRenew = Date.now();
        }
        // Commit the step under the lease first: a lost lease refuses it.
        await lease.updateState({ step: step + 1 });
        step++;
        await progress.increment(lease.key);
        log.push({ task: lease.key, step, by: name, at: Date.now() });
        if (step >= STEPS) {
          await lease.release({ step });
          lease = undefined;
        }
      }
    } catch {
      lease = undefined; // lost, timed out or unreachable: someone else will take the task over
    }
    if (finished.size < tasks.length) setTimeout(tick, STEP_MS);
  };
  setTimeout(tick, 0);
}
