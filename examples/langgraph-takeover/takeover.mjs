// A LangGraph.js thread handed over between processes with Parley's fenced ownership.
// A hub node holds the strong namespace `agents` (a group of one voter here); three worker
// processes (worker.mjs) join it, own the thread in turn and run the graph on it:
//
// 1. worker-a is killed (SIGKILL) after step `killAt`; worker-b, asking for the thread,
//    gets it once a's TTL lapses and resumes from a's last checkpoint.
// 2. worker-b is paused (SIGSTOP) after step `pauseAt`; worker-c takes over the same way.
// 3. worker-b is resumed (SIGCONT) once c made progress: b's late checkpoint is refused
//    by the store (`fence_stale`), so the thread's history stays one chain.
//
// Run after `npm ci`:  node examples/langgraph-takeover/takeover.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ParleySaver } from '@parley/langgraph';
import { createNode } from '@parley/node';

const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export async function run({
  steps = 6,
  killAt = 2,
  pauseAt = 4,
  ttl = 2,
  stepMs = 150,
  print = () => {},
  timeoutMs = 60_000,
} = {}) {
  const root = mkdtempSync(join(tmpdir(), 'parley-langgraph-'));
  const hub = await createNode({ dataDir: join(root, 'hub'), logger: quiet });
  const thread = 'research-42';
  const children = new Map();
  const events = [];
  let finish;
  let fail;
  const finished = new Promise((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const config = JSON.stringify({
    psk: join(root, 'hub', 'cluster.psk'),
    bootstrap: hub.addresses,
    voters: [hub.peerId],
    thread,
    ttl,
    steps,
    stepMs,
  });
  const phase = { killed: false, paused: false, resumed: false, refused: false, done: false };
  const signal = (name, sig) => children.get(name)?.kill(sig);
  const go = (name) => children.get(name)?.stdin.write('go\n');
  const start = (name, standby = false) => {
    const args = [WORKER, name, join(root, name), config, ...(standby ? ['standby'] : [])];
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    children.set(name, child);
    child.on('exit', (code, sig) => {
      if (code !== 0 && sig === null) fail(new Error(`${name} exited with ${code}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const e = JSON.parse(line);
      events.push(e);
      if (e.event === 'owner') print(`${e.worker} owns the thread (fence ${e.fence})`);
      if (e.event === 'resumed') print(`${e.worker}: resumed at step ${e.step}`);
      if (e.event === 'step' && e.step > 0) print(`${e.worker}: step ${e.step}`);
      if (e.event === 'refused') print(`${e.worker}: late write refused (${e.code})`);
      if (e.event === 'done') print(`${e.worker}: done`);
      if (e.event !== 'step' && e.event !== 'refused' && e.event !== 'done') return;
      if (e.worker === 'worker-a' && e.step >= killAt && !phase.killed) {
        phase.killed = true;
        print('killing worker-a');
        signal('worker-a', 'SIGKILL');
        go('worker-b'); // b asks for the thread now; it gets it once a's TTL has lapsed
      } else if (e.worker === 'worker-b' && e.step >= pauseAt && !phase.paused) {
        phase.paused = true;
        print('pausing worker-b');
        signal('worker-b', 'SIGSTOP');
        go('worker-c');
      } else if (e.worker === 'worker-c' && e.event === 'step' && !phase.resumed) {
        phase.resumed = true;
        print('worker-c took over; resuming worker-b');
        signal('worker-b', 'SIGCONT');
      }
      if (e.worker === 'worker-b' && e.event === 'refused') phase.refused = true;
      if (e.worker === 'worker-c' && e.event === 'done') phase.done = true;
      if (phase.refused && phase.done) finish();
    });
  };
  try {
    start('worker-a');
    // Started now so that their start-up is not part of a takeover.
    start('worker-b', true);
    start('worker-c', true);
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no takeover within ${timeoutMs} ms: ${JSON.stringify(events)}`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([finished, timeout]);
    } finally {
      clearTimeout(timer);
    }
    // The thread as the store has it, read on the hub.
    const saver = new ParleySaver({ node: hub, namespace: 'agents' });
    const history = [];
    for await (const t of saver.list({ configurable: { thread_id: thread } })) {
      history.push({
        id: t.checkpoint.id,
        parent: t.parentConfig?.configurable?.checkpoint_id ?? null,
        step: t.checkpoint.channel_values.step ?? null,
        log: t.checkpoint.channel_values.log ?? [],
      });
    }
    return { events, history, phase, final: history[0]?.log ?? [] };
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
  const { final, history } = await run({ print: (line) => console.log(line) });
  console.log(`history: ${history.length} checkpoints in one chain; final log:`);
  for (const line of final) console.log(`  ${line}`);
}
