/**
 * The same agent with a classic bug: it counts a step before the step is
 * committed under the lease, and it ignores a failed commit. Cut off from the
 * cluster, its lease expires and another agent takes the task over while this
 * one keeps counting: steps are counted twice. The partition test catches it.
 */

export const STEPS = 30;
const STEP_MS = 500;
const TTL_SECONDS = 3;

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
          lease.renew(TTL_SECONDS).catch(() => {}); // BUG: a failed renewal goes unnoticed
          lastRenew = Date.now();
        }
        step++;
        await progress.increment(lease.key); // BUG: counted before it is committed
        log.push({ task: lease.key, step, by: name, at: Date.now() });
        lease.updateState({ step }).catch(() => {}); // BUG: a refused commit goes unnoticed
        if (step >= STEPS) {
          const l = lease;
          lease = undefined;
          await l.release({ step }).catch(() => {});
        }
      }
    } catch {
      lease = undefined;
    }
    if (finished.size < tasks.length) setTimeout(tick, STEP_MS);
  };
  setTimeout(tick, 0);
}
