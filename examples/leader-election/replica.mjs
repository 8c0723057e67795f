// One replica of a singleton cron job. Every replica runs this loop; a fenced lock
// (`cron/leader`) decides which one runs the job. The leader renews its lock every TTL/3
// and writes each run with the lock's fence: once a newer leader holds the lock, an old
// leader's write is refused with `fence_stale` and it steps down.
//
// Started by election.mjs: node replica.mjs <name> <dataDir> <config-json>
import { createNode } from '@parley/node';

const [name, dataDir, configJson] = process.argv.slice(2);
const { psk, bootstrap, voters, ttl, everyMs } = JSON.parse(configJson);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const say = (event) => process.stdout.write(`${JSON.stringify({ replica: name, ...event })}\n`);

const node = await createNode({ dataDir, psk, bootstrap, logger: quiet, raft: { voters } });
const locks = node.locks('cron');
const jobs = node.strong('cron');
say({ event: 'ready' });

let runs = 0;
for (;;) {
  let grant;
  try {
    grant = await locks.acquire('leader', { owner: name, ttl, wait: 5 }); // FIFO queue of followers
  } catch (err) {
    if (err.code === 'lock_held' || err.code === 'timeout') continue;
    throw err;
  }
  const fence = { namespace: 'cron', key: 'leader', fence: grant.fence };
  say({ event: 'leader', fence: grant.fence });
  let lost = false;
  const heartbeat = setInterval(
    () => {
      locks.renew('leader', { owner: name, fence: grant.fence, ttl }).catch(() => {
        lost = true;
      });
    },
    (ttl * 1000) / 3,
  );
  try {
    while (!lost) {
      await sleep(everyMs);
      // The job's effect, fenced: refused once a newer leader exists, even if this
      // process does not know yet that it lost the lock (it was paused, say).
      runs++;
      await jobs.set('last-run', { by: name, fence: grant.fence, run: runs }, { fence });
      say({ event: 'ran', fence: grant.fence, run: runs });
    }
    say({ event: 'lost', fence: grant.fence });
  } catch (err) {
    if (err.code !== 'fence_stale') throw err;
    say({ event: 'refused', fence: grant.fence, code: err.code });
  } finally {
    clearInterval(heartbeat);
  }
}
