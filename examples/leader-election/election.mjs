// A singleton cron across replicas: a Parley node holding the strong namespace `cron`
// (a group of one voter here) and N replica processes (replica.mjs) with their own
// nodes competing for the fenced lock `cron/leader`. The program watches the accepted
// runs, pauses the leader (SIGSTOP) until another replica has taken the lock over
// after its TTL, then resumes it: its late write is refused with `fence_stale`.
//
// Run after `npm ci`:  node examples/leader-election/election.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createNode } from '@parley/node';

const REPLICA = fileURLToPath(new URL('./replica.mjs', import.meta.url));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export async function run({ replicas = 3, ttl = 2, everyMs = 200, print = () => {}, timeoutMs = 40_000 } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'parley-election-'));
  const hub = await createNode({ dataDir: join(root, 'hub'), logger: quiet });
  const children = new Map();
  const accepted = []; // every accepted run, in log order: { by, fence, run, revision }
  const events = [];
  /** @type {{ name: string, fence: number, phase: 'stopped' | 'resumed' | 'refused' } | undefined} */
  let paused;
  let finish;
  const finished = new Promise((r) => {
    finish = r;
  });
  try {
    const config = JSON.stringify({
      psk: join(root, 'hub', 'cluster.psk'),
      bootstrap: hub.addresses,
      voters: [hub.peerId],
      ttl,
      everyMs,
    });
    hub.strong('cron').watch({ prefix: 'last-run' }, (change) => {
      if (!change.entry) return;
      const v = change.entry.value;
      accepted.push({ ...v, revision: change.revision });
      print(`run ${v.run} by ${v.by} (fence ${v.fence})`);
      if (!paused && v.run >= 2) {
        paused = { name: v.by, fence: v.fence, phase: 'stopped' };
        print(`pausing ${v.by}`);
        children.get(v.by)?.kill('SIGSTOP');
      } else if (paused?.phase === 'stopped' && v.fence > paused.fence) {
        paused.phase = 'resumed';
        print(`${v.by} took over with fence ${v.fence}; resuming ${paused.name}`);
        children.get(paused.name)?.kill('SIGCONT');
      }
    });
    for (let i = 0; i < replicas; i++) {
      const name = `replica-${i}`;
      const child = spawn(process.execPath, [REPLICA, name, join(root, name), config], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.set(name, child);
      createInterface({ input: child.stdout }).on('line', (line) => {
        const e = JSON.parse(line);
        events.push(e);
        if (e.event === 'refused') print(`${e.replica}: late write with fence ${e.fence} refused (${e.code})`);
        if (e.event === 'refused' && paused?.name === e.replica && paused.phase === 'resumed') {
          paused.phase = 'refused';
          setTimeout(finish, 4 * everyMs); // a few more runs by the new leader
        }
      });
    }
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no refused late write within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([finished, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return { accepted, paused, events };
  } finally {
    await Promise.all(
      [...children.values()].map(
        (c) =>
          new Promise((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', resolve);
            c.kill('SIGCONT');
            c.kill('SIGKILL');
          }),
      ),
    );
    await hub.close();
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { paused, accepted } = await run({ print: (line) => console.log(line) });
  console.log({ paused, acceptedRuns: accepted.length });
}
