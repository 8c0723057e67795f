/**
 * Strong read throughput by consistency, in one run: three Parley voter
 * processes on 127.0.0.1 (libp2p, LevelDB with fsync) read from a follower
 * with 16 concurrent clients — linearizable (forwarded to the leader,
 * ReadIndex), serializable (the follower's own state) and bounded
 * (`maxStalenessMs` 500: the follower's state under a read point it renews
 * every quarter second) — beside a 3-member loopback etcd read through the
 * etcd3 client with the same loops, serializable and linearizable ranges.
 *
 * The machine is shared and loaded, so besides reads/s each row counts CPU
 * per read: the CPU time of every server process of the system under test
 * (the three Parley nodes, reader included; or the three etcd members) over
 * the row, from /proc, divided by the reads done. The etcd rows leave out the
 * etcd3 client's own CPU (this process), the Parley rows include their
 * clients' (they run inside the reading node). The Parley clients are
 * embedded (a call, no network hop to the node), etcd's speak gRPC over
 * loopback: the reads/s rows between them compare a deployment, not a
 * protocol; the CPU rows count the servers' work.
 *
 * Run: npm run bench:reads [-- --json FILE] [--seconds N]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ETCD_MISSING, EtcdCluster, findEtcd } from '@parley/etcd';
import { loadOrCreatePrivateKey, loadOrCreatePsk, peerIdOf } from '@parley/net';
import type { StrongReadOptions } from '@parley/node';
import { PeerProcess } from '@parley/node/testing';
import { Etcd3 } from 'etcd3';
import { Bench } from './index.js';

const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg >= 0 ? Number(process.argv[secondsArg + 1]) : 4;
const CLIENTS = 16;
const KEYS = 100;
const RAFT = { tickMs: 100, electionTimeoutTicks: 10, heartbeatTicks: 1, callTimeoutMs: 10_000 };
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in these ticks. */
const CLOCK_TICKS_PER_S = 100;

/** User + system CPU ms of process `pid` so far. */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
}

const sumCpu = (pids: (number | undefined)[]) => pids.reduce<number>((n, p) => n + cpuMs(p), 0);

interface Measured {
  readsPerSec: number;
  cpuMsPerRead: number;
  failed: Record<string, number>;
}

async function measure(
  pids: (number | undefined)[],
  run: () => Promise<{ reads: number; seconds: number; failed?: Record<string, number> }>,
): Promise<Measured> {
  const before = sumCpu(pids);
  const r = await run();
  const cpu = sumCpu(pids) - before;
  return { readsPerSec: r.reads / r.seconds, cpuMsPerRead: cpu / Math.max(1, r.reads), failed: r.failed ?? {} };
}

/** `clients` concurrent loops of `op` for `ms`. */
async function loops(clients: number, ms: number, op: (i: number) => Promise<void>) {
  const end = performance.now() + ms;
  let reads = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = c; performance.now() < end; i += clients) {
        await op(i);
        reads++;
      }
    }),
  );
  return { reads, seconds: (performance.now() - t0) / 1000 };
}

const bin = findEtcd();
if (!bin) {
  process.stderr.write(`${ETCD_MISSING}\n`);
  process.exit(2);
}
const root = mkdtempSync(join(tmpdir(), 'parley-reads-bench-'));
const procs: PeerProcess[] = [];
let cluster: EtcdCluster | undefined;
let raw: Etcd3 | undefined;
const bench = new Bench(
  `Strong reads by consistency: 3 Parley voters vs 3-member etcd, loopback, ${CLIENTS} clients, ${SECONDS} s per row`,
);

try {
  // --- Parley: three voters, reads from a follower ---------------------------------------
  const dirs = [0, 1, 2].map((i) => join(root, `v${i}`));
  const voters = await Promise.all(dirs.map(async (d) => peerIdOf(await loadOrCreatePrivateKey(join(d, 'peer.key')))));
  const psk = join(root, 'cluster.psk');
  await loadOrCreatePsk(psk);
  for (let i = 0; i < 3; i++) {
    procs[i] = await PeerProcess.start({
      dataDir: dirs[i] as string,
      listen: ['/ip4/127.0.0.1/tcp/0'],
      bootstrap: procs.filter((p) => p !== undefined).flatMap((p) => p.addresses),
      psk,
      raft: { ...RAFT, voters },
    });
  }
  let leader = -1;
  for (let attempt = 0; attempt < 400 && leader < 0; attempt++) {
    for (let i = 0; i < 3 && leader < 0; i++) {
      const st = await (procs[i] as PeerProcess).status().catch(() => undefined);
      if (st && st.leader === st.self) leader = i;
    }
    if (leader < 0) await new Promise((r) => setTimeout(r, 50));
  }
  if (leader < 0) throw new Error('no leader');
  const follower = procs[(leader + 1) % 3] as PeerProcess;
  const pids = procs.map((p) => p.child.pid);
  for (let k = 0; k < KEYS; k++) {
    await follower.run({
      kind: 'call',
      api: 'strong',
      namespace: 'rd',
      method: 'set',
      args: [`r${k}`, { k, pad: 'x'.repeat(40) }],
    });
  }
  const parley = (options: StrongReadOptions) =>
    measure(pids, () =>
      follower.run<{ reads: number; seconds: number; failed: Record<string, number> }>(
        { kind: 'reads', clients: CLIENTS, durationMs: SECONDS * 1000, namespace: 'rd', keys: KEYS, options },
        SECONDS * 1000 + 60_000,
      ),
    );
  // Warm every path first.
  for (const o of [{}, { consistency: 'serializable' as const }, { maxStalenessMs: 500 }]) {
    await follower.run({ kind: 'reads', clients: CLIENTS, durationMs: 1_000, namespace: 'rd', keys: KEYS, options: o });
  }
  const pLin = await parley({});
  const pSer = await parley({ consistency: 'serializable' });
  const pBounded = await parley({ maxStalenessMs: 500 });

  // --- etcd: three members, the etcd3 client in this process ----------------------------
  const edir = join(root, 'etcd');
  cluster = await EtcdCluster.start(bin, edir);
  raw = new Etcd3({ hosts: cluster.endpoints });
  const epids = cluster.members.map((m) => m.proc?.pid);
  for (let k = 0; k < KEYS; k++) await raw.put(`/rd/r${k}`).value(JSON.stringify({ k, pad: 'x'.repeat(40) }));
  const etcd = (serializable: boolean) =>
    measure(epids, () =>
      loops(CLIENTS, SECONDS * 1000, async (i) => {
        const get = (raw as Etcd3).get(`/rd/r${i % KEYS}`);
        await get.serializable(serializable).string();
      }),
    );
  await loops(CLIENTS, 1_000, async (i) => {
    await (raw as Etcd3)
      .get(`/rd/r${i % KEYS}`)
      .serializable(true)
      .string();
  });
  const eLin = await etcd(false);
  const eSer = await etcd(true);

  const fail = (m: Measured) => (Object.keys(m.failed).length === 0 ? '' : ` (failed: ${JSON.stringify(m.failed)})`);
  bench.add({
    name: `Parley serializable reads/s from a follower${fail(pSer)}`,
    unit: 'reads/s',
    value: pSer.readsPerSec,
    anchor: 'Parley linearizable reads/s, same follower',
    anchorValue: pLin.readsPerSec,
  });
  bench.add({
    name: `Parley bounded (500 ms) reads/s from a follower${fail(pBounded)}`,
    unit: 'reads/s',
    value: pBounded.readsPerSec,
    anchor: 'Parley linearizable reads/s, same follower',
    anchorValue: pLin.readsPerSec,
  });
  bench.add({
    name: 'Parley serializable reads/s (embedded client) vs etcd',
    unit: 'reads/s',
    value: pSer.readsPerSec,
    anchor: 'etcd serializable range reads/s (etcd3 client, gRPC)',
    anchorValue: eSer.readsPerSec,
  });
  bench.add({
    name: `Parley linearizable reads/s from a follower vs etcd${fail(pLin)}`,
    unit: 'reads/s',
    value: pLin.readsPerSec,
    anchor: 'etcd linearizable range reads/s (etcd3 client, gRPC)',
    anchorValue: eLin.readsPerSec,
  });
  bench.add({
    name: 'Parley serializable CPU ms per read (3 nodes, clients included)',
    unit: 'ms',
    value: pSer.cpuMsPerRead,
    anchor: 'Parley linearizable CPU ms per read',
    anchorValue: pLin.cpuMsPerRead,
  });
  bench.add({
    name: 'Parley bounded (500 ms) CPU ms per read',
    unit: 'ms',
    value: pBounded.cpuMsPerRead,
    anchor: 'Parley linearizable CPU ms per read',
    anchorValue: pLin.cpuMsPerRead,
  });
  bench.add({
    name: 'Parley serializable CPU ms per read vs etcd',
    unit: 'ms',
    value: pSer.cpuMsPerRead,
    anchor: 'etcd serializable CPU ms per read (3 members, client left out)',
    anchorValue: eSer.cpuMsPerRead,
  });
  bench.add({
    name: 'Parley linearizable CPU ms per read vs etcd',
    unit: 'ms',
    value: pLin.cpuMsPerRead,
    anchor: 'etcd linearizable CPU ms per read (3 members, client left out)',
    anchorValue: eLin.cpuMsPerRead,
  });
  await bench.finish();
} finally {
  raw?.close();
  await cluster?.close();
  await Promise.allSettled(procs.map((p) => p?.kill()));
  rmSync(root, { recursive: true, force: true });
}
