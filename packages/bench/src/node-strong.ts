/**
 * Strong-side benchmarks of the node: three voter processes on 127.0.0.1
 * (libp2p, LevelDB with fsync), election timeout 1000 ms (10 ticks of
 * 100 ms), heartbeat 100 ms. The workloads run inside the leader's process
 * (an embedded client, as a Parley process is), except failover, which is
 * driven from a follower.
 *
 * - strong write p50/p99, 1 client (sequential `set`);
 * - CAS ops/s, 16 clients (read-then-`set ifVersion` loops, own key each);
 * - lock acquire + release cycles/s, 1 client;
 * - failover: kill -9 of the leader → next successful write from a follower,
 *   20 trials (median and max), the killed voter restarted between trials.
 *
 * Anchor measured in the same run on the same disk: a raw LevelDB `put` with
 * fsync (the floor of any durable write here) — latency for the write rows,
 * and 16 concurrent writers' puts/s for CAS. The etcd side-by-side is a later
 * benchmark; until then the ratio says how far above one local fsync a
 * replicated, fsynced write is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreatePrivateKey, loadOrCreatePsk, peerIdOf } from '@parley/net';
import { PeerProcess } from '@parley/node/testing';
import { openLevelKV } from '@parley/storage';
import { type Bench, quantile } from './index.js';

export interface StrongBenchOptions {
  writes: number;
  casSeconds: number;
  lockSeconds: number;
  failoverTrials: number;
}

export const DEFAULT_STRONG_BENCH: StrongBenchOptions = {
  writes: 300,
  casSeconds: 5,
  lockSeconds: 5,
  failoverTrials: 20,
};

const RAFT = { tickMs: 100, electionTimeoutTicks: 10, heartbeatTicks: 1, callTimeoutMs: 10_000 };

async function levelAnchor(dir: string, writes: number): Promise<{ p50: number; opsPerSec16: number }> {
  const kv = await openLevelKV({ path: join(dir, 'anchor'), sync: true });
  try {
    const value = new TextEncoder().encode(JSON.stringify({ i: 0, pad: 'x'.repeat(40) }));
    const lat: number[] = [];
    for (let i = 0; i < writes; i++) {
      const t0 = performance.now();
      await kv.save(['w', String(i % 64)], value);
      lat.push(performance.now() - t0);
    }
    const end = performance.now() + 2_000;
    let n = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async (_, c) => {
        while (performance.now() < end) {
          await kv.save(['c', String(c)], value);
          n++;
        }
      }),
    );
    return { p50: quantile(lat, 0.5), opsPerSec16: n / ((performance.now() - t0) / 1000) };
  } finally {
    await kv.close();
  }
}

export async function runStrongBench(bench: Bench, o: StrongBenchOptions = DEFAULT_STRONG_BENCH): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'parley-strong-bench-'));
  const procs: PeerProcess[] = [];
  try {
    const anchor = await levelAnchor(root, o.writes);
    const dirs = [0, 1, 2].map((i) => join(root, `v${i}`));
    const voters = await Promise.all(
      dirs.map(async (d) => peerIdOf(await loadOrCreatePrivateKey(join(d, 'peer.key')))),
    );
    const psk = join(root, 'cluster.psk');
    await loadOrCreatePsk(psk);
    const start = async (i: number) => {
      const live = procs.filter((p) => p && !p.exited);
      procs[i] = await PeerProcess.start({
        dataDir: dirs[i] as string,
        listen: ['/ip4/127.0.0.1/tcp/0'],
        bootstrap: live.flatMap((p) => p.addresses),
        psk,
        raft: { ...RAFT, voters },
      });
    };
    for (let i = 0; i < 3; i++) await start(i);
    const leader = async (): Promise<number> => {
      for (let attempt = 0; attempt < 200; attempt++) {
        for (let i = 0; i < 3; i++) {
          const p = procs[i];
          if (!p || p.exited) continue;
          const st = await p.status().catch(() => undefined);
          if (st && st.leader === st.self) return i;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('no leader');
    };
    let li = await leader();
    const lp = () => procs[li] as PeerProcess;

    await lp().run({ kind: 'writes', count: 20, namespace: 'warm' });
    const { latencies } = await lp().run<{ latencies: number[] }>({ kind: 'writes', count: o.writes, namespace: 'w' });
    bench.add({
      name: 'strong write p50, 1 client (3 voters, fsync)',
      unit: 'ms',
      value: quantile(latencies, 0.5),
      anchor: 'LevelDB put, fsync, p50',
      anchorValue: anchor.p50,
    });
    bench.add({ name: 'strong write p99, 1 client', unit: 'ms', value: quantile(latencies, 0.99) });

    const cas = await lp().run<{ swaps: number; conflicts: number; seconds: number }>({
      kind: 'cas',
      clients: 16,
      durationMs: o.casSeconds * 1000,
      namespace: 'cas',
    });
    bench.add({
      name: 'CAS ops/s, 16 clients',
      unit: 'ops/s',
      value: cas.swaps / cas.seconds,
      anchor: 'LevelDB put, fsync, 16 writers',
      anchorValue: anchor.opsPerSec16,
    });

    const locks = await lp().run<{ cycles: number; seconds: number }>({
      kind: 'locks',
      durationMs: o.lockSeconds * 1000,
      namespace: 'locks',
    });
    bench.add({
      name: 'lock acquire + release cycles/s, 1 client',
      unit: 'cycles/s',
      value: locks.cycles / locks.seconds,
      anchor: 'LevelDB put, fsync (2 per cycle)',
      anchorValue: 1000 / anchor.p50 / 2,
    });

    const failovers: number[] = [];
    for (let t = 0; t < o.failoverTrials; t++) {
      li = await leader();
      const follower = procs[(li + 1) % 3] as PeerProcess;
      // Writes flow, then the leader dies; time from the kill to the next acknowledged write.
      await follower.run({ kind: 'writes', count: 1, namespace: 'fo' });
      const killed = li;
      const t0 = performance.now();
      await (procs[killed] as PeerProcess).kill();
      await follower.run({ kind: 'writeUntilOk', namespace: 'fo', timeoutMs: 30_000 });
      failovers.push(performance.now() - t0);
      await start(killed);
    }
    bench.add({
      name: `failover median, leader kill -9 → next write (${o.failoverTrials} trials)`,
      unit: 'ms',
      value: quantile(failovers, 0.5),
      anchor: 'election timeout (configured)',
      anchorValue: 1000,
    });
    bench.add({ name: 'failover max', unit: 'ms', value: Math.max(...failovers) });
  } finally {
    await Promise.allSettled(procs.map((p) => p?.kill()));
    rmSync(root, { recursive: true, force: true });
  }
}
