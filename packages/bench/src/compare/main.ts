/**
 * `npm run bench:compare`: Parley beside etcd (strong side) and Yjs /
 * Automerge (eventual side), in one run, on this machine's real processes,
 * disks and loopback sockets. Prints one table, writes
 * docs/bench/compare-<date>.json and the SVG charts docs/bench/compare-*.svg.
 *
 * Options: --only strong,writes,cas,locks,claims,failover,eventual,local,propagation
 *          (eventual = local rates, anti-entropy and propagation; local = only the local
 *          set/get rates; propagation = only the N-node propagation step with its Yjs anchor)
 *          --reps N (default 3)   --trials N (failover trials per side, default 20)
 *          --seconds S (each rate workload, default 3)   --writes N (default 200)
 *          --nodes N (eventual propagation nodes, writer included, default 20)   --etcd PATH   --out DIR
 *          --warm-ops N (default 2000)   --warm-seconds S (default 10): before each strong workload is
 *          timed, both sides run it for N operations or S seconds, whichever comes first
 *          --json FILE (the rows, options and load average, also written to FILE)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ETCD_MISSING, EtcdCluster, findEtcd } from '@parley/etcd';
import { Etcd3 } from 'etcd3';
import { etcdAdapter } from './etcd-adapter.js';
import { antiEntropyAnchors, localRates } from './eventual.js';
import { failoverTrials } from './failover.js';
import { parseOptions } from './options.js';
import { ParleyCluster } from './parley-cluster.js';
import { cpuMsOf, hasStrace, SyscallCounter } from './proc.js';
import { Progress } from './progress.js';
import {
  atLeast,
  atMost,
  atMostAnchor,
  type CompareRow,
  compareRow,
  formatCompareTable,
  markdownTable,
} from './rows.js';
import { quantile, spread } from './stats.js';
import { cdfChart } from './svg.js';
import { runStrongTask, type StrongTask, type StrongTaskResult, warmupOf } from './workloads.js';
import { PROPAGATION_UPDATES, YJS_TOPOLOGY, yjsPropagation } from './yjs-propagation.js';

const opts = parseOptions(process.argv.slice(2));
const repoRoot = resolve(fileURLToPath(new URL('../../../..', import.meta.url)));
const outDir = opts.out ?? join(repoRoot, 'docs', 'bench');

const has = (w: string) => opts.only.has(w);
const strongWork = ['writes', 'cas', 'locks', 'claims', 'failover'].filter((w) => has(w) || has('strong'));

const etcdBin = strongWork.length > 0 ? findEtcd(opts.etcd) : undefined;
if (strongWork.length > 0 && !etcdBin) {
  process.stderr.write(`${ETCD_MISSING}\n`);
  process.exit(2);
}

const root = mkdtempSync(join(tmpdir(), 'parley-compare-'));
let etcd: EtcdCluster | undefined;
let parley: ParleyCluster | undefined;
let etcdClient: Etcd3 | undefined;
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  etcdClient?.close();
  await Promise.allSettled([etcd?.close(), parley?.close()]);
  rmSync(root, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    process.stderr.write(`\n${sig}: tearing down etcd and Parley processes\n`);
    void cleanup().finally(() => process.exit(130));
  });
}

const rows: CompareRow[] = [];
const extra: Record<string, unknown> = {};
const load = loadavg();
const steps =
  (strongWork.length > 0 ? 3 : 0) +
  (strongWork.includes('writes') ? opts.reps + 2 : 0) +
  (strongWork.includes('cas') ? 2 * (opts.reps + 1) : 0) +
  (strongWork.includes('locks') ? 2 * (opts.reps + 1) : 0) +
  (strongWork.includes('claims') ? opts.reps + 1 : 0) +
  (strongWork.includes('failover') ? 4 * opts.trials : 0) +
  (has('eventual') ? opts.reps + 3 : has('propagation') ? 2 : 0) +
  (has('local') && !has('eventual') ? opts.reps : 0);
const progress = new Progress(Math.max(1, steps));

function rate(r: StrongTaskResult): number {
  if (r.kind !== 'rate') throw new Error(`expected a rate, got ${r.kind}`);
  return r.ops / r.seconds;
}

async function both(task: StrongTask): Promise<{ parley: StrongTaskResult; etcd: StrongTaskResult }> {
  // Sides run one after the other (never at once): each has both cores to itself.
  const p = await (parley as ParleyCluster).run({ ...task, prefix: `p-${task.prefix}` });
  const e = await runStrongTask(etcdAdapter(etcdClient as Etcd3), { ...task, prefix: `e-${task.prefix}` });
  return { parley: p, etcd: e };
}

/** Operations a task ran (successful or not). */
function opsOf(r: StrongTaskResult): number {
  if (r.kind === 'writes') return r.latencies.length;
  if (r.kind === 'rate') return r.ops + r.retries;
  return r.acks.length + r.errors;
}

/** etcd's member processes now running. */
function etcdPids(): number[] {
  return (etcd as EtcdCluster).members.flatMap((m) =>
    m.proc && m.proc.exitCode === null && m.proc.pid !== undefined ? [m.proc.pid] : [],
  );
}

/**
 * Warms every process of both sides on `task`'s own workload before it is
 * timed: Parley's voters and client node, etcd's members (and the etcd3
 * client in this process) run --warm-ops operations or --warm-seconds,
 * whichever comes first, so the timed loop measures optimized code and not
 * V8's compiler.
 */
const warmups: { task: string; parleyOps: number; etcdOps: number; seconds: number }[] = [];
async function warm(task: StrongTask): Promise<{ parley: StrongTaskResult; etcd: StrongTaskResult }> {
  const t0 = performance.now();
  const res = await both(warmupOf(task, opts.warmOps, opts.warmSeconds));
  const seconds = (performance.now() - t0) / 1000;
  warmups.push({ task: task.prefix, parleyOps: opsOf(res.parley), etcdOps: opsOf(res.etcd), seconds });
  progress.step(
    `warm-up ${task.prefix}: ${opsOf(res.parley)} Parley / ${opsOf(res.etcd)} etcd ops in ${seconds.toFixed(1)} s`,
  );
  return res;
}

/** One timed repetition of the write loop per side, with the CPU time of every process of each side. */
async function timedWrites(task: Extract<StrongTask, { kind: 'writes' }>): Promise<{
  parley: number[];
  etcd: number[];
  cpu: { parleyAll: number; parleyVoters: number; etcdMembers: number; etcdClient: number };
}> {
  const pc = parley as ParleyCluster;
  const pids = pc.pids();
  const voters = pc.voterPids();
  const pAll0 = cpuMsOf(pids);
  const pVoters0 = cpuMsOf(voters);
  const p = await pc.run({ ...task, prefix: `p-${task.prefix}` });
  const pAll = cpuMsOf(pids) - pAll0;
  const pVoters = cpuMsOf(voters) - pVoters0;
  const members = etcdPids();
  const e0 = cpuMsOf(members);
  const self0 = process.cpuUsage();
  const e = await runStrongTask(etcdAdapter(etcdClient as Etcd3), { ...task, prefix: `e-${task.prefix}` });
  const self = process.cpuUsage(self0);
  const eMembers = cpuMsOf(members) - e0;
  const n = task.count;
  return {
    parley: p.kind === 'writes' ? p.latencies : [],
    etcd: e.kind === 'writes' ? e.latencies : [],
    cpu: {
      parleyAll: pAll / n,
      parleyVoters: pVoters / n,
      etcdMembers: eMembers / n,
      etcdClient: (self.user + self.system) / 1000 / n,
    },
  };
}

/**
 * Socket write syscalls per write on each side, under strace (a pass of its
 * own after the timed ones: ptrace slows every traced call). Skipped, with a
 * note, where strace is not installed.
 */
async function syscallRows(): Promise<void> {
  if (!hasStrace()) {
    process.stderr.write('\nstrace is not installed: no socket-write syscall rows (apt-get install strace)\n');
    return;
  }
  const n = opts.writes;
  const count = async (pids: number[], run: () => Promise<StrongTaskResult>): Promise<number[]> => {
    const counter = await SyscallCounter.attach(pids, (pid) => join(root, `strace-${pid}.txt`));
    let ran: unknown;
    try {
      await run();
    } catch (err) {
      ran = err;
    }
    const counts = await counter.stop();
    if (ran) throw ran;
    return counts.map((c) => c / n);
  };
  const pc = parley as ParleyCluster;
  const voters = pc.voterPids().length;
  const p = await count(pc.pids(), () => pc.run({ kind: 'writes', count: n, prefix: 'p-strace' }));
  const e = await count(etcdPids(), () =>
    runStrongTask(etcdAdapter(etcdClient as Etcd3), { kind: 'writes', count: n, prefix: 'e-strace' }),
  );
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  extra.socket_writes_per_write = { parley: p, etcd: e };
  progress.step('socket write syscalls per write (strace)');
  rows.push(
    compareRow({
      name: `strong write socket write syscalls per write, every process (Parley 3 voters + client node; etcd 3 members), ${n} writes under strace`,
      unit: 'calls',
      better: 'lower',
      value: spread([sum(p)]),
      anchor: 'etcd',
      anchorValue: spread([sum(e)]),
    }),
    compareRow({
      name: `strong write socket write syscalls per write, 3 voters / 3 members only, ${n} writes under strace`,
      unit: 'calls',
      better: 'lower',
      value: spread([sum(p.slice(0, voters))]),
      anchor: 'etcd',
      anchorValue: spread([sum(e)]),
    }),
  );
}

async function strongSide(): Promise<void> {
  etcd = await EtcdCluster.start(etcdBin as string, root);
  etcdClient = new Etcd3({ hosts: etcd.endpoints });
  progress.step('etcd: 3 members up');
  parley = await ParleyCluster.start(root);
  await parley.leaderIndex();
  progress.step('Parley: 3 voters + client up');
  // The first warm-up (connections, leader discovery, JIT) is the write loop; its first writes are the cold figures.
  const cold = await warm({ kind: 'writes', count: opts.writes, prefix: 'w' });

  if (strongWork.includes('writes')) {
    const p50 = { p: [] as number[], e: [] as number[] };
    const p99 = { p: [] as number[], e: [] as number[] };
    const all = { p: [] as number[], e: [] as number[] };
    const cpu = {
      pAll: [] as number[],
      pVoters: [] as number[],
      eMembers: [] as number[],
      eWithClient: [] as number[],
    };
    for (let r = 0; r < opts.reps; r++) {
      const res = await timedWrites({ kind: 'writes', count: opts.writes, prefix: `w${r}` });
      const pl = res.parley;
      const el = res.etcd;
      p50.p.push(quantile(pl, 0.5));
      p50.e.push(quantile(el, 0.5));
      p99.p.push(quantile(pl, 0.99));
      p99.e.push(quantile(el, 0.99));
      all.p.push(...pl);
      all.e.push(...el);
      cpu.pAll.push(res.cpu.parleyAll);
      cpu.pVoters.push(res.cpu.parleyVoters);
      cpu.eMembers.push(res.cpu.etcdMembers);
      cpu.eWithClient.push(res.cpu.etcdMembers + res.cpu.etcdClient);
      progress.step(`writes rep ${r + 1}`);
    }
    const coldOf = (x: StrongTaskResult) => (x.kind === 'writes' ? x.latencies.slice(0, opts.writes) : []);
    const coldN = Math.min(coldOf(cold.parley).length, coldOf(cold.etcd).length);
    extra.warmups = warmups;
    rows.push(
      ...([50, 99] as const).map((p) =>
        compareRow({
          name: `strong write p${p}, 1 client, sequential, cold (first ${coldN} writes after start)`,
          unit: 'ms',
          better: 'lower',
          value: spread([quantile(coldOf(cold.parley), p / 100)]),
          anchor: 'etcd',
          anchorValue: spread([quantile(coldOf(cold.etcd), p / 100)]),
        }),
      ),
    );
    rows.push(
      compareRow({
        name: 'strong write p50, 1 client, sequential',
        unit: 'ms',
        better: 'lower',
        value: spread(p50.p),
        anchor: 'etcd',
        anchorValue: spread(p50.e),
        target: atMostAnchor(),
      }),
      compareRow({
        name: 'strong write p99, 1 client, sequential',
        unit: 'ms',
        better: 'lower',
        value: spread(p99.p),
        anchor: 'etcd',
        anchorValue: spread(p99.e),
        target: atMostAnchor(),
      }),
      compareRow({
        name: 'strong write CPU per write, every process (Parley 3 voters + client node; etcd 3 members)',
        unit: 'ms',
        better: 'lower',
        value: spread(cpu.pAll),
        anchor: 'etcd',
        anchorValue: spread(cpu.eMembers),
        target: atMostAnchor(),
      }),
      compareRow({
        name: 'strong write CPU per write, every process (Parley 3 voters + client node; etcd 3 members)',
        unit: 'ms',
        better: 'lower',
        value: spread(cpu.pAll),
        anchor: 'etcd 3 members + etcd3 client (benchmark process)',
        anchorValue: spread(cpu.eWithClient),
      }),
      compareRow({
        name: 'strong write CPU per write, 3 voters / 3 members only',
        unit: 'ms',
        better: 'lower',
        value: spread(cpu.pVoters),
        anchor: 'etcd',
        anchorValue: spread(cpu.eMembers),
      }),
    );
    await syscallRows();
    writeSvg(
      'compare-write-latency.svg',
      cdfChart(`Strong write latency, 1 client (${all.p.length} writes per side)`, [
        { label: 'Parley (3 voters, client = non-voter node process)', color: '#1f77b4', values: all.p },
        { label: 'etcd 3.4 (3 members, etcd3 client)', color: '#d62728', values: all.e },
      ]),
    );
  }

  if (strongWork.includes('cas')) {
    for (const hot of [false, true]) {
      const v = { p: [] as number[], e: [] as number[] };
      const retries = { p: 0, e: 0 };
      await warm({ kind: 'cas', clients: 16, hot, durationMs: opts.seconds * 1000, prefix: `cas${hot ? 'h' : 'k'}` });
      for (let r = 0; r < opts.reps; r++) {
        const res = await both({
          kind: 'cas',
          clients: 16,
          hot,
          durationMs: opts.seconds * 1000,
          prefix: `cas${hot ? 'h' : 'k'}${r}`,
        });
        v.p.push(rate(res.parley));
        v.e.push(rate(res.etcd));
        retries.p += res.parley.kind === 'rate' ? res.parley.retries : 0;
        retries.e += res.etcd.kind === 'rate' ? res.etcd.retries : 0;
        progress.step(`CAS ${hot ? 'hot key' : '16 keys'} rep ${r + 1}`);
      }
      extra[`cas_${hot ? 'hot' : 'keys'}_mismatches`] = retries;
      rows.push(
        compareRow({
          name: `CAS ops/s, 16 clients, ${hot ? '1 hot key' : '16 keys'}`,
          unit: 'ops/s',
          better: 'higher',
          value: spread(v.p),
          anchor: 'etcd',
          anchorValue: spread(v.e),
          target: atLeast(2),
        }),
      );
    }
  }

  if (strongWork.includes('locks')) {
    for (const clients of [1, 4]) {
      const v = { p: [] as number[], e: [] as number[] };
      await warm({ kind: 'locks', clients, durationMs: opts.seconds * 1000, prefix: `lock${clients}` });
      for (let r = 0; r < opts.reps; r++) {
        const res = await both({
          kind: 'locks',
          clients,
          durationMs: opts.seconds * 1000,
          prefix: `lock${clients}-${r}`,
        });
        v.p.push(rate(res.parley));
        v.e.push(rate(res.etcd));
        progress.step(`locks ${clients} client(s) rep ${r + 1}`);
      }
      rows.push(
        compareRow({
          name: `lock acquire+release cycles/s, ${clients === 1 ? '1 client' : '4 contending clients'}`,
          unit: 'cycles/s',
          better: 'higher',
          value: spread(v.p),
          anchor: 'etcd (etcd3 lock API)',
          anchorValue: spread(v.e),
          target: atLeast(clients === 1 ? 1.5 : 3),
        }),
      );
    }
  }

  if (strongWork.includes('claims')) {
    const v = { p: [] as number[], e: [] as number[] };
    await warm({ kind: 'claims', clients: 16, durationMs: opts.seconds * 1000, prefix: 'claim' });
    for (let r = 0; r < opts.reps; r++) {
      const res = await both({ kind: 'claims', clients: 16, durationMs: opts.seconds * 1000, prefix: `claim${r}` });
      v.p.push(rate(res.parley));
      v.e.push(rate(res.etcd));
      progress.step(`claims rep ${r + 1}`);
    }
    rows.push(
      compareRow({
        name: 'create-only claims/s, 16 clients',
        unit: 'claims/s',
        better: 'higher',
        value: spread(v.p),
        anchor: 'etcd (txn create_revision = 0)',
        anchorValue: spread(v.e),
      }),
    );
  }

  extra.warmups = warmups;
  if (strongWork.includes('failover')) {
    const out = await failoverTrials({
      parley,
      etcd,
      client: etcdClient as Etcd3,
      trials: opts.trials,
      step: (what) => progress.step(what),
    });
    rows.push(...out.rows);
    Object.assign(extra, out.extra);
    writeSvg('compare-failover.svg', out.svg);
  }
}

/**
 * The eventual side: local set/get and anti-entropy anchors measured here
 * (./eventual.ts), gossip propagation and Parley's anti-entropy bytes from
 * @parley/node's own benchmark program (node processes on loopback).
 */
async function eventualSide(): Promise<void> {
  await localAndAntiEntropy();
  await propagation(true);
}

/** Local set/get rates and the anti-entropy anchors (Yjs, Automerge over TCP). */
async function localAndAntiEntropy(): Promise<void> {
  await localSide();
  const ae = await antiEntropyAnchors(100_000);
  extra.anti_entropy_anchors = ae;
  progress.step('anti-entropy anchors (Yjs, Automerge over TCP)');
}

/** Local durable set, get and peek rates against Yjs and Automerge (each side warmed up first). */
async function localSide(): Promise<void> {
  const runs: Awaited<ReturnType<typeof localRates>>[] = [];
  for (let r = 0; r < opts.reps; r++) {
    runs.push(await localRates(Math.min(2_000, opts.seconds * 1000)));
    progress.step(`local set/get rep ${r + 1}`);
  }
  const of = (side: 'parley' | 'yjs' | 'automerge', f: 'set' | 'setCpuUs' | 'get' | 'peek') =>
    spread(runs.map((l) => l[side][f]));
  const yjsKv = 'Yjs Y.Map + LevelDB fsync per update';
  const amKv = 'Automerge map + LevelDB fsync per change';
  const setRow = 'local durable set ops/s, 1 writer, sequential';
  const cpuRow = 'local durable set CPU per op (process, user + system), 1 writer';
  const getRow = 'local get ops/s, 1 reader, await get() (anchors awaited the same way)';
  const peekRow = 'local get ops/s, 1 reader, peek() (synchronous)';
  rows.push(
    compareRow({
      name: setRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'set'),
      anchor: yjsKv,
      anchorValue: of('yjs', 'set'),
      target: atLeast(1, 'Yjs'),
    }),
    compareRow({
      name: setRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'set'),
      anchor: amKv,
      anchorValue: of('automerge', 'set'),
    }),
    compareRow({
      name: cpuRow,
      unit: 'µs',
      better: 'lower',
      value: of('parley', 'setCpuUs'),
      anchor: yjsKv,
      anchorValue: of('yjs', 'setCpuUs'),
    }),
    compareRow({
      name: getRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'get'),
      anchor: 'Yjs Y.Map.get',
      anchorValue: of('yjs', 'get'),
    }),
    compareRow({
      name: peekRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'peek'),
      anchor: 'Yjs Y.Map.get',
      anchorValue: of('yjs', 'peek'),
      target: atLeast(1, 'Yjs'),
    }),
    compareRow({
      name: peekRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'peek'),
      anchor: 'Automerge map read',
      anchorValue: of('automerge', 'peek'),
    }),
  );
}

/**
 * Parley's N-node propagation (and, with `withAntiEntropy`, its anti-entropy bytes) from
 * @parley/node's benchmark program, then the same workload on Yjs over y-protocols.
 */
async function propagation(withAntiEntropy: boolean): Promise<void> {
  const ae = extra.anti_entropy_anchors as Awaited<ReturnType<typeof antiEntropyAnchors>> | undefined;

  const json = join(root, 'eventual.json');
  const program = join(repoRoot, 'packages', 'bench', 'dist', 'node.js');
  const runNodeBench = () =>
    new Promise<number | null>((resolveExit, reject) => {
      const child = spawn(
        process.execPath,
        [
          program,
          '--side',
          'eventual',
          '--json',
          json,
          '--peers',
          String(opts.nodes - 1),
          '--only',
          withAntiEntropy ? 'gossip,ae' : 'gossip',
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      child.once('error', reject);
      child.once('exit', resolveExit);
    });
  let code = await runNodeBench();
  if (code !== 0) {
    // On a loaded machine one of the 19 node processes may miss its 20 s start bound: one more try.
    process.stderr.write(`\n@parley/node's eventual benchmark exited with ${code}; running it once more\n`);
    code = await runNodeBench();
  }
  if (code !== 0) throw new Error(`@parley/node's eventual benchmark exited with ${code}`);
  const results = JSON.parse(readFileSync(json, 'utf8')) as CompareRow[];
  progress.step(`Parley propagation (${opts.nodes} nodes) and anti-entropy (@parley/node bench)`);

  // The anchor of propagation: the same workload on Yjs over y-protocols, same node count.
  const y = await yjsPropagation(opts.nodes);
  extra.yjs_propagation = { nodes: y.nodes, links: y.edges, missing: y.missing, bytesOut: y.bytesOut };
  progress.step(`Yjs propagation over y-protocols (${opts.nodes} nodes)`);
  const yjsAnchor = `Yjs + y-protocols sync over TCP (${YJS_TOPOLOGY})`;
  for (const r of results) {
    const q = r.name.startsWith('gossip set→watch p50') ? 0.5 : r.name.startsWith('gossip set→watch p99') ? 0.99 : 0;
    if (q > 0) {
      rows.push(
        compareRow({
          name: `propagation set→observe p${q * 100}, ${opts.nodes} nodes, 100 updates/s`,
          unit: 'ms',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([quantile(y.latenciesMs, q)]),
        }),
      );
    }
    if (r.name.startsWith('gossip CPU per delivery')) {
      rows.push(
        compareRow({
          name: `propagation CPU per delivery (receiving process, user + system), ${opts.nodes} nodes`,
          unit: 'ms',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([y.cpuPerDeliveryMs]),
        }),
      );
    }
    if (r.name.startsWith('idle cluster CPU per process')) {
      rows.push(
        compareRow({
          name: `idle cluster CPU per process, ${opts.nodes} nodes`,
          unit: 'ms/s',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([y.idleCpuMsPerSecond]),
          target: atMost(5, 'ms/s'),
        }),
      );
    }
    if (r.name.startsWith('gossip deliveries missing')) {
      rows.push(
        compareRow({
          name: `propagation deliveries missing 2 s after the last set (of ${PROPAGATION_UPDATES * (opts.nodes - 1)})`,
          unit: 'count',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([y.missing]),
        }),
      );
    }
  }
  for (const r of results) {
    rows.push({ ...r, name: `${r.name} [@parley/node bench]`, better: r.unit.includes('/s') ? 'higher' : 'lower' });
    if (ae && r.name.startsWith('anti-entropy bytes, 1%')) {
      rows.push(
        compareRow({
          name: 'anti-entropy bytes, 1% of 100,000 keys changed',
          unit: 'B',
          better: 'lower',
          value: spread([r.value]),
          anchor: 'Yjs state-vector sync over TCP',
          anchorValue: spread([ae.yjs.bytes]),
        }),
        compareRow({
          name: 'anti-entropy bytes, 1% of 100,000 keys changed',
          unit: 'B',
          better: 'lower',
          value: spread([r.value]),
          anchor: 'Automerge sync protocol over TCP',
          anchorValue: spread([ae.automerge.bytes]),
        }),
      );
    }
  }
}

function writeSvg(name: string, svg: string): void {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, name), `${svg}\n`);
}

let failed = false;
const t0 = Date.now();
try {
  if (strongWork.length > 0) await strongSide();
  await etcdClient?.close();
  etcdClient = undefined;
  await Promise.allSettled([etcd?.close(), parley?.close()]);
  if (has('eventual')) await eventualSide();
  else {
    if (has('local')) await localSide();
    if (has('propagation')) await propagation(false);
  }
} catch (err) {
  failed = true;
  process.stderr.write(`\nbench:compare failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
} finally {
  progress.end();
  await cleanup();
}
const title = `Parley side by side (load average at start ${load.map((l) => l.toFixed(1)).join(' ')}, ${Math.round((Date.now() - t0) / 1000)} s)`;
process.stdout.write(`${formatCompareTable(title, rows)}\n`);
if (rows.length > 0) {
  const date = new Date().toISOString().slice(0, 10);
  const file = join(outDir, `compare-${date}.json`);
  mkdirSync(outDir, { recursive: true });
  const json = `${JSON.stringify({ load, loadAtEnd: loadavg(), options: { ...opts, only: [...opts.only] }, rows, extra }, null, 2)}\n`;
  for (const f of opts.json ? [file, resolve(opts.json)] : [file]) {
    writeFileSync(f, json);
    // In the repository's own format (Biome packs number arrays), so the file can be committed as written.
    spawnSync(join(repoRoot, 'node_modules', '.bin', 'biome'), ['format', '--write', f], { stdio: 'ignore' });
  }
  process.stdout.write(`wrote ${file}\n${markdownTable(rows)}\n`);
}
process.exit(failed ? 1 : 0);
