// The agent task board: a Parley node holding the board (a strong namespace, here a
// group of one voter) and N agent processes (agent.mjs), each with its own node. The
// board watches the eventual namespace `board-live` and prints a live board. With
// --freeze it pauses (SIGSTOP) an agent in the middle of a task until another agent
// has taken the task over after the lease ran out, resumes it (its late write is
// refused by its stale epoch), then kills it.
//
// Run after `npm ci`:  node examples/agent-task-board/board.mjs --agents 3 --tasks 6 --freeze
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createNode } from '@parley/node';

const AGENT = fileURLToPath(new URL('./agent.mjs', import.meta.url));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export async function run({
  agents = 3,
  tasks = 6,
  steps = 4,
  stepMs = 250,
  ttl = 2,
  freeze = false,
  print = () => {},
  timeoutMs = 60_000,
} = {}) {
  const root = mkdtempSync(join(tmpdir(), 'parley-task-board-'));
  const hub = await createNode({ dataDir: join(root, 'board'), logger: quiet });
  const children = new Map();
  const lines = [];
  const live = hub.eventual('board-live');
  const agentsView = new Map();
  const refused = [];
  const takeovers = [];
  /** @type {{ name: string, task: number, epoch: number, phase: 'stopped' | 'resumed' | 'killed' } | undefined} */
  let frozen;
  let resolveDone;
  const allDone = new Promise((r) => {
    resolveDone = r;
  });
  const draw = async () => {
    const counter = (await live.get('tasks-done'))?.value ?? 0;
    const rows = [...agentsView.entries()].map(([n, v]) => {
      const state = n === frozen?.name && frozen.phase === 'stopped' ? ' (paused)' : '';
      const task =
        v.task === null || v.task === undefined ? 'idle' : `task ${v.task} epoch ${v.epoch} step ${v.step}/${steps}`;
      return `  ${n.padEnd(8)} ${task}${state}`;
    });
    print(`board: ${counter}/${tasks} done\n${rows.join('\n')}`);
  };

  try {
    const config = JSON.stringify({
      psk: join(root, 'board', 'cluster.psk'),
      bootstrap: hub.addresses,
      voters: [hub.peerId],
      tasks,
      steps,
      stepMs,
      ttl,
    });
    const owner = new Map(); // task -> { name, epoch } last seen working on it
    live.watch({}, (change) => {
      if (change.key.startsWith('agent/') && change.entry) {
        const name = change.key.slice('agent/'.length);
        const v = change.entry.value;
        agentsView.set(name, v);
        if (v.task !== null) {
          const prev = owner.get(v.task);
          if (prev && prev.name !== name && v.epoch > prev.epoch)
            takeovers.push({ task: v.task, from: prev, to: { name, epoch: v.epoch } });
          owner.set(v.task, { name, epoch: v.epoch });
          if (freeze && !frozen && v.step >= 1) {
            frozen = { name, task: v.task, epoch: v.epoch, phase: 'stopped' };
            children.get(name)?.kill('SIGSTOP');
          } else if (
            frozen?.phase === 'stopped' &&
            v.task === frozen.task &&
            name !== frozen.name &&
            v.epoch > frozen.epoch
          ) {
            frozen.phase = 'resumed';
            children.get(frozen.name)?.kill('SIGCONT');
          }
        }
      }
      if (change.key.startsWith('refused/') && change.entry) {
        const name = change.key.slice('refused/'.length);
        refused.push({ agent: name, ...change.entry.value });
        if (frozen?.name === name && frozen.phase === 'resumed') {
          frozen.phase = 'killed';
          children.get(name)?.kill('SIGKILL');
        }
      }
      if (change.key === 'tasks-done' && change.entry?.value >= tasks) resolveDone();
      draw().catch(() => {});
    });

    for (let a = 0; a < agents; a++) {
      const name = `agent-${a}`;
      const child = spawn(process.execPath, [AGENT, name, join(root, name), config], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.set(name, child);
      createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
    }

    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`board not done within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([allDone, timeout]);
    } finally {
      clearTimeout(timer);
    }
    // The agents see every task done and exit by themselves (bounded), then the last board.
    await Promise.race([
      Promise.all(
        [...children.values()].map((c) =>
          c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)),
        ),
      ),
      new Promise((r) => setTimeout(r, 10_000)),
    ]);
    await draw();
    const done = [];
    for (let i = 0; i < tasks; i++) done.push((await hub.strong('board').get(`done/${i}`))?.value);
    const doneBy = {};
    for (const n of children.keys()) doneBy[n] = (await live.get(`done-by/${n}`))?.value ?? 0;
    return { tasksDone: (await live.get('tasks-done'))?.value, done, doneBy, frozen, takeovers, refused, lines };
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
  const arg = (flag, d) => {
    const i = process.argv.indexOf(flag);
    return i >= 0 ? Number(process.argv[i + 1]) : d;
  };
  const tty = process.stdout.isTTY;
  const summary = await run({
    agents: arg('--agents', 3),
    tasks: arg('--tasks', 6),
    freeze: process.argv.includes('--freeze'),
    print: (text) => process.stdout.write(tty ? `\x1b[H\x1b[2J${text}\n` : `${text}\n---\n`),
  });
  const { lines, ...rest } = summary;
  console.log(JSON.stringify(rest, null, 2));
}
