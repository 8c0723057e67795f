/**
 * Benchmarks of eventual namespaces through the node API, each beside an
 * anchor measured in the same run on the same workload:
 *
 * - gossip propagation: `set` on one node (this process) to `watch` firing on
 *   each of the other node processes on loopback (real libp2p, LevelDB with
 *   fsync, merge included), at 100 updates/s; anchor: the same stamped
 *   messages sent to the same processes over Node's IPC channel (what the
 *   machine's scheduling alone costs);
 * - local durable `set` ops/s (64 writers, fsync on) vs Yjs with every update
 *   saved in the same kind of LevelDB store (y-leveldb's approach);
 * - cold start: reopening a node holding N entries until it serves reads, vs
 *   iterating the same N entries stored one per key in LevelDB;
 * - anti-entropy after 1% of 100,000 keys changed on one side: bytes moved vs
 *   the changed payload and vs Automerge's sync on the same change.
 *
 * `npm run bench:node [-- --quick] [-- --json FILE] [-- --peers N] [-- --only gossip,sets,cold,ae]`
 * `[-- --gossip-before-durable]` (the writer gossips while its batch is written; the idle
 * rows, which the option does not touch, are then left out).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as Automerge from '@automerge/automerge';
import { SeededRandom } from '@parley/interface';
import { createMemoryNetwork, loadOrCreatePsk, silentLogger } from '@parley/net';
import { createNode } from '@parley/node';
import { EventualPeer } from '@parley/node/testing';
import { openLevelKV, openMemoryKV, openMemoryRaftLog } from '@parley/storage';
import * as Y from 'yjs';
import { type Bench, idleSeries, quantile, startStopwatch, warmUp } from './index.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const peersArg = argv.indexOf('--peers');
const PEERS = peersArg >= 0 ? Number(argv[peersArg + 1]) : quick ? 4 : 9;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'parley-node-bench-'));
  dirs.push(d);
  return d;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const earlyGossip = argv.includes('--gossip-before-durable');
/** The suffix of every row name of a `--gossip-before-durable` run. */
export const EARLY_GOSSIP_MODE = ', gossipBeforeDurable';
const only = argv.indexOf('--only');
const selected = only >= 0 ? (argv[only + 1] ?? '').split(',') : ['gossip', 'sets', 'cold', 'ae'];

export async function runEventualBench(bench: Bench): Promise<void> {
  try {
    if (selected.includes('gossip')) await gossipPropagation(bench);
    if (selected.includes('sets')) await durableSets(bench);
    if (selected.includes('cold')) await coldStart(bench);
    if (selected.includes('ae')) await antiEntropy(bench);
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

async function gossipPropagation(bench: Bench): Promise<void> {
  const dataDir = tempDir();
  const psk = join(dataDir, 'cluster.psk');
  await loadOrCreatePsk(psk);
  const writer = await createNode({
    dataDir,
    psk,
    logger: quiet,
    ...(earlyGossip ? { eventual: { gossipBeforeDurable: true } } : {}),
  });
  const peers: EventualPeer[] = [];
  try {
    for (let i = 0; i < PEERS; i++) {
      peers.push(
        await EventualPeer.start(
          {
            dataDir: tempDir(),
            listen: ['/ip4/127.0.0.1/tcp/0'],
            bootstrap: [...writer.addresses, ...peers.flatMap((p) => p.addresses.slice(0, 1))],
            psk,
            namespaces: ['gossip'],
          },
          60_000,
        ), // 20 node processes on a loaded 2-core machine: a start can take over 20 s
      );
    }
    const ns = writer.eventual('gossip');
    await Promise.all(peers.map((p) => p.run({ kind: 'watch', namespace: 'gossip', prefix: 'g' })));
    // Let the gossipsub mesh form and warm every process (JIT, LevelDB, streams): 2,000 sets
    // or 10 s at the timed rate (100/s: faster builds a backlog the timed phase inherits), each
    // received by every peer. Then let the last of them settle.
    await warmUp((w) => ns.set(`warm${w % 100}`, w), 10);
    await sleep(2_000);
    const count = quick ? 200 : 500;
    const cpuOf = async () =>
      (await Promise.all(peers.map((p) => p.run<{ cpuMs: number }>({ kind: 'cpu' })))).reduce((a, r) => a + r.cpuMs, 0);
    const cpuBefore = await cpuOf();
    // Each timed set's own latency at the writer (until durable): in the default mode its gossip waits for it.
    const durable: number[] = [];
    const start = performance.now();
    const sent = new Map<string, number>();
    const sentIpc = new Map<string, number>();
    for (let i = 0; i < count; i++) {
      const key = `g${i}`;
      const t0 = performance.now();
      const t = performance.timeOrigin + t0;
      sent.set(key, t);
      void ns.set(key, { i, t }).then(() => durable.push(performance.now() - t0));
      const ipcKey = `s${i}`;
      sentIpc.set(ipcKey, performance.timeOrigin + performance.now());
      for (const p of peers) p.stamp(ipcKey);
      // 100 updates/s on a fixed schedule: a late timer does not lower the rate.
      await sleep(Math.max(0, start + (i + 1) * 10 - performance.now()));
    }
    await sleep(2_000);
    const cpuMs = (await cpuOf()) - cpuBefore;
    const ours: number[] = [];
    const ipc: number[] = [];
    let missing = 0;
    for (const p of peers) {
      const r = await p.run<{ arrivals: Record<string, number>; stamps: Record<string, number> }>({
        kind: 'arrivals',
        namespace: 'gossip',
        prefix: 'g',
      });
      for (const [key, t0] of sent) {
        const t1 = r.arrivals[key];
        if (t1 === undefined) missing++;
        else ours.push(t1 - t0);
      }
      for (const [key, t0] of sentIpc) {
        const t1 = r.stamps[key];
        if (t1 !== undefined) ipc.push(t1 - t0);
      }
    }
    const mode = earlyGossip ? EARLY_GOSSIP_MODE : '';
    const label = `${PEERS + 1} nodes (${PEERS} processes + this one), 100 updates/s${mode}`;
    const anchor = 'same stamps over Node IPC';
    bench.add({
      name: `gossip set→watch p50, ${label}`,
      unit: 'ms',
      value: quantile(ours, 0.5),
      anchor,
      anchorValue: quantile(ipc, 0.5),
    });
    bench.add({
      name: `gossip set→watch p99, ${label}`,
      unit: 'ms',
      value: quantile(ours, 0.99),
      anchor,
      anchorValue: quantile(ipc, 0.99),
    });
    bench.add({ name: `gossip deliveries missing after 2 s${mode}`, unit: 'count', value: missing });
    bench.add({ name: `writer set→durable p50, ${label}`, unit: 'ms', value: quantile(durable, 0.5) });
    bench.add({ name: `writer set→durable p99, ${label}`, unit: 'ms', value: quantile(durable, 0.99) });
    // CPU time (user + system) of every receiving process over the timed sets and the 2 s after,
    // per set and per receiving node: what one delivery costs, mostly independent of the load.
    bench.add({
      name: `gossip CPU per delivery (receiving process)${mode}`,
      unit: 'ms',
      value: cpuMs / (count * PEERS),
    });
    if (earlyGossip) return;
    // Idle: the same processes with nothing to do (connections, gossipsub, timers), CPU ms per second each.
    for (const w of await idleSeries(cpuOf, PEERS)) {
      bench.add({
        name: `idle cluster CPU per process, ${PEERS + 1} nodes, ${w.label}`,
        unit: 'ms/s',
        value: w.msPerSecond,
      });
    }
  } finally {
    await Promise.allSettled(peers.map((p) => p.close()));
    await writer.close();
  }
}

async function durableSets(bench: Bench): Promise<void> {
  const writers = 64;
  const durationMs = quick ? 1_500 : 3_000;
  const node = await createNode({ dataDir: tempDir(), logger: quiet, eventual: { maxLiveKeys: 1_000_000 } });
  const ns = node.eventual('bench');
  await warmUp((i) => ns.set(`w${i % 64}-${i % 1000}`, { i }));
  let ops = 0;
  let stop = false;
  const clock = startStopwatch();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        await ns.set(`w${w}-${i % 1000}`, { w, i });
        ops++;
        if (clock() > durationMs) stop = true;
      }
    }),
  );
  const ourRate = (ops / clock()) * 1000;
  await node.close();

  // Anchor: Yjs, each update saved (fsync) in LevelDB before the write counts as done.
  const kv = await openLevelKV({ path: join(tempDir(), 'yjs') });
  const doc = new Y.Doc();
  const map = doc.getMap('m');
  let seq = 0;
  let pending: Promise<void> = Promise.resolve();
  doc.on('update', (update: Uint8Array) => {
    pending = kv.save(['y', String(seq++).padStart(12, '0')], update);
  });
  await warmUp(async (i) => {
    map.set(`w${i % 64}-${i % 1000}`, { i });
    await pending;
  });
  let yOps = 0;
  stop = false;
  const yClock = startStopwatch();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        map.set(`w${w}-${i % 1000}`, { w, i });
        await pending;
        yOps++;
        if (yClock() > durationMs) stop = true;
      }
    }),
  );
  const yRate = (yOps / yClock()) * 1000;
  await kv.close();
  bench.add({
    name: `durable set, ${writers} writers (fsync)`,
    unit: 'ops/s',
    value: ourRate,
    anchor: 'Yjs + LevelDB save per update',
    anchorValue: yRate,
  });
}

async function coldStart(bench: Bench): Promise<void> {
  const n = quick ? 100_000 : 1_000_000;
  const dataDir = tempDir();
  const options = { dataDir, logger: quiet, eventual: { maxLiveKeys: n + 10 } };
  let node = await createNode(options);
  const ns = node.eventual('cold');
  for (let i = 0; i < n; i += 10_000) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(n, i + 10_000); j++) batch.push(ns.set(`key-${j}`, j));
    await Promise.all(batch);
  }
  await node.close();
  const clock = startStopwatch();
  node = await createNode(options);
  const value = (await node.eventual('cold').get(`key-${n - 1}`))?.value;
  const ourMs = clock();
  if (value !== n - 1) throw new Error('bench sanity: cold start lost data');
  await node.close();

  // Anchor: the same entries one per key in LevelDB, iterated.
  const kv = await openLevelKV({ path: join(tempDir(), 'perkey') });
  for (let i = 0; i < n; i += 10_000) {
    const ops = [];
    for (let j = i; j < Math.min(n, i + 10_000); j++) {
      ops.push({ type: 'put' as const, key: ['c', `key-${j}`], data: new TextEncoder().encode(JSON.stringify(j)) });
    }
    await kv.batch(ops);
  }
  await kv.close();
  const aClock = startStopwatch();
  const kv2 = await openLevelKV({ path: join(dirs[dirs.length - 1] as string, 'perkey') });
  const rows = await kv2.loadRange(['c']);
  const anchorMs = aClock();
  await kv2.close();
  if (rows.length !== n) throw new Error('bench sanity: per-key rows');
  bench.add({
    name: `cold start, ${n.toLocaleString('en-US')} entries, to first read`,
    unit: 'ms',
    value: ourMs,
    anchor: 'LevelDB per-key iteration',
    anchorValue: anchorMs,
  });
}

async function antiEntropy(bench: Bench): Promise<void> {
  const n = 100_000;
  const changed = n / 100;
  const network = createMemoryNetwork();
  const start = async (id: string) =>
    createNode({
      transport: network.createTransport({ peerId: id, logger: silentLogger }),
      storage: { kv: await openMemoryKV(), raftLog: await openMemoryRaftLog() },
      random: new SeededRandom(1),
      logger: quiet,
      eventual: { maxLiveKeys: n + 10, antiEntropyMs: 3_600_000 },
    });
  const a = await start('a');
  const b = await start('b');
  const na = a.eventual('ae');
  const nb = b.eventual('ae');
  for (let i = 0; i < n; i += 10_000) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < i + 10_000; j++) batch.push(na.set(`key-${j}`, j));
    await Promise.all(batch);
  }
  for (;;) {
    const page = await nb.get(`key-${n - 1}`);
    if (page) break;
    await sleep(50);
  }
  await sleep(500);
  network.partition(['a'], ['b']);
  let changedBytes = 0;
  for (let i = 0; i < changed; i++) {
    const k = `key-${i * 100}`;
    await na.set(k, -i);
    changedBytes += Buffer.byteLength(k) + Buffer.byteLength(JSON.stringify(-i));
  }
  let aeBytes = 0;
  b.events.on('antientropy:round', (r) => {
    aeBytes += r.bytes;
  });
  network.heal();
  for (;;) {
    if ((await nb.get(`key-${(changed - 1) * 100}`))?.value === -(changed - 1)) break;
    await sleep(20);
  }
  await sleep(200);
  await a.close();
  await b.close();

  // Anchor: Automerge's sync protocol on the same change.
  let aa = Automerge.change(Automerge.init<Record<string, number>>(), (d) => {
    for (let i = 0; i < n; i++) d[`key-${i}`] = i;
  });
  let ab = Automerge.merge(Automerge.init<Record<string, number>>(), aa);
  let sa = Automerge.initSyncState();
  let sb = Automerge.initSyncState();
  const sync = (): number => {
    let bytes = 0;
    for (let round = 0; round < 20; round++) {
      let moved = false;
      const [nsa, ma] = Automerge.generateSyncMessage(aa, sa);
      sa = nsa;
      if (ma) {
        bytes += ma.length;
        [ab, sb] = Automerge.receiveSyncMessage(ab, sb, ma);
        moved = true;
      }
      const [nsb, mb] = Automerge.generateSyncMessage(ab, sb);
      sb = nsb;
      if (mb) {
        bytes += mb.length;
        [aa, sa] = Automerge.receiveSyncMessage(aa, sa, mb);
        moved = true;
      }
      if (!moved) break;
    }
    return bytes;
  };
  sync();
  aa = Automerge.change(aa, (d) => {
    for (let i = 0; i < changed; i++) d[`key-${i * 100}`] = -i;
  });
  const amBytes = sync();
  bench.add({
    name: 'anti-entropy bytes, 1% of 100,000 keys changed',
    unit: 'B',
    value: aeBytes,
    anchor: 'Automerge sync',
    anchorValue: amBytes,
  });
  bench.add({ name: 'anti-entropy bytes / changed key+value bytes', unit: '×', value: aeBytes / changedBytes });
}
