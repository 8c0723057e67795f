/**
 * The y-websocket door against the reference server: the same 20 stock
 * providers (this process) on one Parley node (LevelDB, fsync, the door) and
 * on `@y/websocket-server` (documents in memory), each server in a child
 * process of its own, in the same run, alternating twice.
 *
 * - warm-up: 200 edits (JIT, and the node's first document open) before any figure.
 * - sequential: one edit at a time (a Y.Map key), from each client in turn;
 *   the next leaves once all 19 others have it. Latency = edit → seen by a
 *   receiver, over every (edit, receiver) pair.
 * - load: every client edits every 50 ms (400 edits/s in all) for LOAD_MS.
 * - server CPU per edit: the child's user+system CPU over the phase / edits
 *   (what the process spends meanwhile on its own timers included; the idle
 *   row measures that alone).
 *
 * Run: `npm run bench:yjs [-- --json FILE]`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { type Client, synced, until, yClient } from '@parley/server/testing';
import type * as Y from 'yjs';
import { Bench, quantile } from './index.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const SEQUENTIAL = Number(process.env.BENCH_EDITS ?? 400);
const LOAD_MS = Number(process.env.BENCH_LOAD_MS ?? 3_000);
const LOAD_PERIOD_MS = 50;
const ROUNDS = 2;
const WARMUP = 200;
// Every provider listens for the process's exit.
process.setMaxListeners(CLIENTS * 2 + 10);

type Kind = 'parley' | 'reference';

interface Server {
  child: ChildProcess;
  port: number;
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

function startServer(kind: Kind): Promise<Server> {
  const child = fork(new URL('./yjs-server.js', import.meta.url), [kind], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ask = <T>(type: string, answer: string) =>
    new Promise<T>((resolve) => {
      const on = (m: { type: string } & T) => {
        if (m.type !== answer) return;
        child.off('message', on);
        resolve(m);
      };
      child.on('message', on);
      child.send({ type });
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
    child.once('message', (m: { type: string; port: number }) => {
      child.removeAllListeners('exit');
      resolve({
        child,
        port: m.port,
        async cpuMicros() {
          const { usage } = await ask<{ usage: NodeJS.CpuUsage }>('cpu', 'cpu');
          return usage.user + usage.system;
        },
        stop: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            child.send({ type: 'stop' });
          }),
      });
    });
  });
}

/** Receipt times of each key at each client. */
class Arrivals {
  private readonly waiting = new Map<string, { left: number; done: () => void }>();
  readonly latencies: number[] = [];
  private readonly sentAt = new Map<string, number>();

  watch(clients: Client[]): void {
    for (const c of clients) {
      c.doc.getMap<number>('m').observe((event: Y.YMapEvent<number>, tr) => {
        if (tr.local) return;
        const now = performance.now();
        for (const key of event.keysChanged) {
          const sent = this.sentAt.get(key);
          if (sent === undefined) continue;
          this.latencies.push(now - sent);
          const w = this.waiting.get(key);
          if (w && --w.left === 0) {
            this.waiting.delete(key);
            w.done();
          }
        }
      });
    }
  }

  send(from: Client, key: string): Promise<void> {
    const arrived = new Promise<void>((done) => this.waiting.set(key, { left: CLIENTS - 1, done }));
    this.sentAt.set(key, performance.now());
    from.doc.getMap<number>('m').set(key, 1);
    return arrived;
  }

  reset(): void {
    this.latencies.length = 0;
  }
}

const IDLE_MS = 2_000;

interface Phase {
  p50: number;
  p99: number;
  cpuPerEdit: number;
}

interface Run {
  sequential: Phase;
  load: Phase;
  /** Server CPU while the 20 clients are connected and nobody edits, µs per second. */
  idle: number;
}

async function measure(kind: Kind, round: number): Promise<Run> {
  const server = await startServer(kind);
  const url = `ws://127.0.0.1:${server.port}/yjs`;
  const clients = Array.from({ length: CLIENTS }, () => yClient(url, `bench/r${round}`));
  try {
    await Promise.all(clients.map((c) => synced(c, 30_000)));
    const arrivals = new Arrivals();
    arrivals.watch(clients);
    for (let i = 0; i < WARMUP; i++) await arrivals.send(clients[i % CLIENTS] as Client, `w${i}`);
    arrivals.reset();

    let cpu = await server.cpuMicros();
    const idleStart = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idle = (((await server.cpuMicros()) - cpu) / (performance.now() - idleStart)) * 1000;

    cpu = await server.cpuMicros();
    for (let i = 0; i < SEQUENTIAL; i++) await arrivals.send(clients[i % CLIENTS] as Client, `s${i}`);
    const sequential: Phase = {
      p50: quantile(arrivals.latencies, 0.5),
      p99: quantile(arrivals.latencies, 0.99),
      cpuPerEdit: ((await server.cpuMicros()) - cpu) / SEQUENTIAL,
    };
    arrivals.reset();

    cpu = await server.cpuMicros();
    const pending: Promise<void>[] = [];
    let edits = 0;
    const end = performance.now() + LOAD_MS;
    const timers = clients.map((c, i) =>
      setInterval(() => {
        if (performance.now() < end) pending.push(arrivals.send(c, `l${i}.${edits++}`));
      }, LOAD_PERIOD_MS),
    );
    await until('the load phase ends', () => performance.now() >= end, LOAD_MS + 5_000);
    for (const t of timers) clearInterval(t);
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 30_000))]);
    const load: Phase = {
      p50: quantile(arrivals.latencies, 0.5),
      p99: quantile(arrivals.latencies, 0.99),
      cpuPerEdit: ((await server.cpuMicros()) - cpu) / edits,
    };
    return { sequential, load, idle };
  } finally {
    for (const c of clients) c.destroy();
    await server.stop();
  }
}

const median = (xs: number[]) => quantile(xs, 0.5);

async function main(): Promise<void> {
  const runs: Record<Kind, Run[]> = { parley: [], reference: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of (round % 2 === 0 ? ['parley', 'reference'] : ['reference', 'parley']) as Kind[]) {
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${kind}\n`);
      runs[kind].push(await measure(kind, round));
    }
  }
  const bench = new Bench(
    `@parley/server y-websocket door: ${CLIENTS} stock providers, one node (LevelDB, fsync) vs @y/websocket-server 0.1.1 (in memory)`,
  );
  const anchor = '@y/websocket-server 0.1.1, same clients';
  const row = (name: string, unit: string, pick: (r: Run) => number) =>
    bench.add({
      name,
      unit,
      value: median(runs.parley.map(pick)),
      anchor,
      anchorValue: median(runs.reference.map(pick)),
    });
  row('fan-out latency p50, one edit at a time', 'ms', (r) => r.sequential.p50);
  row('fan-out latency p99, one edit at a time', 'ms', (r) => r.sequential.p99);
  row(`fan-out latency p50, ${(CLIENTS * 1000) / LOAD_PERIOD_MS} edits/s`, 'ms', (r) => r.load.p50);
  row(`fan-out latency p99, ${(CLIENTS * 1000) / LOAD_PERIOD_MS} edits/s`, 'ms', (r) => r.load.p99);
  row('server CPU per edit, one edit at a time', 'µs', (r) => r.sequential.cpuPerEdit);
  row(`server CPU per edit, ${(CLIENTS * 1000) / LOAD_PERIOD_MS} edits/s`, 'µs', (r) => r.load.cpuPerEdit);
  row('server CPU with no edits (20 clients connected)', 'µs/s', (r) => r.idle);
  await bench.finish();
}

await main();
