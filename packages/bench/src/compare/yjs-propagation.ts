/**
 * The propagation anchor: the workload of @parley/node's gossip benchmark
 * (2,000 warm-up sets or 10 s at 100/s, then 500 sets of `g<i>` = {i, t} at 100/s from one
 * writer, arrivals read 2 s after the last set) on Yjs documents synced
 * through y-protocols over loopback TCP, with the same number of nodes: the
 * writer in this process, every other node its own process (./yjs-peer.ts).
 *
 * Topology (the class of Parley's gossipsub run, where the publisher floods
 * to every connected peer and each peer forwards to a mesh of about D = 6):
 * the writer is connected to every node; the other nodes form a circulant
 * graph where node i is also connected to nodes i±1, i±2, i±3, so each
 * has about 6 neighbours besides the writer, and relays every update that
 * changed its document to all its connections but the sender.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { idleSeries, warmUp } from '../index.js';
import type { YjsPeerTask } from './yjs-peer.js';
import { YjsSyncEndpoint } from './yjs-sync.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sets timed after the warm-up, at 100/s (as in @parley/node's gossip benchmark). */
export const PROPAGATION_UPDATES = 500;
/** The topology, as the table names it. */
export const YJS_TOPOLOGY = 'writer linked to all, others circulant ±3';

/** Neighbours of the non-writer nodes 0..m-1: each pair once, dialled by the lower index. */
export function circulantEdges(m: number, reach = 3): Array<[number, number]> {
  const edges = new Set<string>();
  const out: Array<[number, number]> = [];
  for (let i = 0; i < m; i++) {
    for (let d = 1; d <= reach; d++) {
      const j = (i + d) % m;
      if (j === i) continue;
      const a = Math.min(i, j);
      const b = Math.max(i, j);
      if (edges.has(`${a}-${b}`)) continue;
      edges.add(`${a}-${b}`);
      out.push([a, b]);
    }
  }
  return out;
}

class YjsPeer {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {}

  static start(dataDir: string, timeoutMs = 20_000): Promise<YjsPeer> {
    const program = fileURLToPath(new URL('./yjs-peer.js', import.meta.url));
    const child = fork(program, [JSON.stringify({ dataDir })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error('Yjs peer process did not start in time'));
      }, timeoutMs);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`Yjs peer process exited with ${code} before it was ready`));
      });
      child.once('message', (msg: { type: string; port: number }) => {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        if (msg.type !== 'ready') reject(new Error(`unexpected first message ${msg.type}`));
        else resolve(new YjsPeer(child, msg.port));
      });
    });
  }

  ask<T>(task: YjsPeerTask, reply: string, timeoutMs = 30_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.off('message', on);
        reject(new Error(`Yjs peer did not answer ${task.type} in time`));
      }, timeoutMs);
      const on = (msg: { type: string; error?: string }) => {
        if (msg.type !== reply && msg.type !== 'error') return;
        clearTimeout(timer);
        this.child.off('message', on);
        if (msg.type === 'error') reject(new Error(msg.error));
        else resolve(msg as T);
      };
      this.child.on('message', on);
      this.child.send(task);
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.send({ type: 'close' } satisfies YjsPeerTask);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

export interface PropagationResult {
  latenciesMs: number[];
  missing: number;
  nodes: number;
  edges: number;
  bytesOut: number;
  /** CPU time (user + system) of the receiving processes over the timed sets and the 2 s after, per delivery. */
  cpuPerDeliveryMs: number;
  /** CPU (user + system) per receiving process per second with nothing sent, ms, in each of `IDLE_WINDOWS`. */
  idle: { label: string; msPerSecond: number }[];
}

/** Runs the workload on `nodes` Yjs nodes (writer included). */
export async function yjsPropagation(nodes: number, count = PROPAGATION_UPDATES): Promise<PropagationResult> {
  const root = mkdtempSync(join(tmpdir(), 'parley-compare-yjs-'));
  const peers: YjsPeer[] = [];
  let writer: YjsSyncEndpoint | undefined;
  try {
    for (let i = 0; i < nodes - 1; i++) peers.push(await YjsPeer.start(join(root, `peer${i}`)));
    writer = await YjsSyncEndpoint.open(join(root, 'writer'));
    await Promise.all(peers.map((p) => (writer as YjsSyncEndpoint).connect(p.port)));
    const edges = circulantEdges(peers.length);
    const dials = new Map<number, number[]>();
    for (const [a, b] of edges) dials.set(a, [...(dials.get(a) ?? []), (peers[b] as YjsPeer).port]);
    await Promise.all(peers.map((p, i) => p.ask({ type: 'connect', ports: dials.get(i) ?? [] }, 'connected')));
    const map = writer.doc.getMap('gossip');
    // Every process warmed as on Parley's side (@parley/node's gossip benchmark): 2,000 sets or 10 s at 100/s.
    await warmUp((w) => map.set(`warm${w % 100}`, w), 10);
    await sleep(2_000);
    const cpuOf = async () =>
      (await Promise.all(peers.map((p) => p.ask<{ cpuMs: number }>({ type: 'cpu' }, 'cpu')))).reduce(
        (a, r) => a + r.cpuMs,
        0,
      );
    const cpuBefore = await cpuOf();
    const sent = new Map<string, number>();
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const key = `g${i}`;
      const t = performance.timeOrigin + performance.now();
      sent.set(key, t);
      map.set(key, { i, t });
      // 100 updates/s on a fixed schedule (as the Parley side): a late timer does not lower the rate.
      await sleep(Math.max(0, start + (i + 1) * 10 - performance.now()));
    }
    await sleep(2_000);
    const cpuMs = (await cpuOf()) - cpuBefore;
    const latenciesMs: number[] = [];
    let missing = 0;
    let bytesOut = writer.bytesOut;
    for (const p of peers) {
      const r = await p.ask<{ arrivals: Record<string, number>; bytesOut: number }>(
        { type: 'arrivals', prefix: 'g' },
        'arrivals',
      );
      bytesOut += r.bytesOut;
      for (const [key, t0] of sent) {
        const t1 = r.arrivals[key];
        if (t1 === undefined) missing++;
        else latenciesMs.push(t1 - t0);
      }
    }
    // Idle: the same processes with nothing to send, in the same windows as Parley's side.
    const idle = await idleSeries(cpuOf, peers.length);
    return {
      latenciesMs,
      missing,
      nodes,
      edges: edges.length + peers.length,
      bytesOut,
      cpuPerDeliveryMs: cpuMs / (count * peers.length),
      idle,
    };
  } finally {
    await Promise.allSettled(peers.map((p) => p.close()));
    await writer?.close();
    rmSync(root, { recursive: true, force: true });
  }
}
