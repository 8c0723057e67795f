// One agent of the task board: its own Parley node (its own data dir), joined to the
// board's node. It takes tasks with fenced leases, heartbeats them, writes its progress
// and result through the lease (refused once a newer epoch exists), and reports on the
// eventual namespace `board-live` (counters and its current task).
//
// Started by board.mjs: node agent.mjs <name> <dataDir> <config-json>
import { createNode } from '@parley/node';

const [name, dataDir, configJson] = process.argv.slice(2);
const { psk, bootstrap, voters, tasks, steps, stepMs, ttl } = JSON.parse(configJson);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const say = (event) => process.stdout.write(`${JSON.stringify({ agent: name, ...event })}\n`);

const node = await createNode({ dataDir, psk, bootstrap, logger: quiet, raft: { voters } });
const board = node.strong('board');
const live = node.eventual('board-live');

// One agent seeds the board: `claim` has exactly one winner, whoever asks first.
const seed = await board.claim('seeded', { by: name }, { ttl: 3600 });
if (seed.won) {
  for (let i = 0; i < tasks; i++) await board.set(`task/${i}`, { title: `task ${i}` }, { ifNotExists: true });
}
say({ event: 'ready', seeded: seed.won });

const isDone = async (i) => (await board.get(`done/${i}`)) !== undefined;

/** Works on one task under a lease; returns 'done', 'busy' or 'refused'. */
async function work(i) {
  let lease;
  try {
    lease = await board.lease(`lease/${i}`, { ttl, holder: name });
  } catch (err) {
    if (err.code === 'lock_held') return 'busy';
    throw err;
  }
  const epoch = lease.epoch;
  const start = lease.view.state?.step ?? 0; // a takeover resumes where the last holder got to
  if (lease.view.state?.done || (await isDone(i))) {
    await lease.release(lease.view.state);
    return 'done';
  }
  let lost;
  const heartbeat = setInterval(
    () => {
      lease.renew().catch((err) => {
        lost ??= { op: 'renew', code: err.code };
      });
    },
    (ttl * 1000) / 3,
  );
  try {
    await live.set(`agent/${name}`, { task: i, epoch, step: start });
    for (let step = start + 1; step <= steps; step++) {
      await sleep(stepMs);
      // A fenced write: only the holder of the newest epoch may write the lease's state.
      await lease.updateState({ step, by: name });
      await live.set(`agent/${name}`, { task: i, epoch, step });
    }
    await lease.updateState({ step: steps, by: name, done: true });
    await board.set(`done/${i}`, { by: name, epoch }, { ifNotExists: true });
    await lease.release({ step: steps, by: name, done: true });
    await live.increment('tasks-done');
    await live.increment(`done-by/${name}`);
    await live.set(`agent/${name}`, { task: null });
    say({ event: 'done', task: i, epoch });
    return 'done';
  } catch (err) {
    if (err.code !== 'lease_lost' && err.code !== 'key_already_exists') throw err;
    // A late write of a holder that was paused past its lease: refused by its stale epoch.
    const refusal = { task: i, epoch, op: lost?.op ?? 'updateState', code: err.code };
    await live.set(`refused/${name}`, refusal);
    await live.set(`agent/${name}`, { task: null });
    say({ event: 'refused', ...refusal });
    return 'refused';
  } finally {
    clearInterval(heartbeat);
  }
}

for (;;) {
  let open = 0;
  for (let i = 0; i < tasks; i++) {
    if (await isDone(i)) continue;
    open++;
    await work(i);
  }
  if (open === 0) break;
  await sleep(100);
}
say({ event: 'finished' });
await node.close();
