/**
 * The strong side of `bench:compare`: a 3-member etcd cluster beside 3 Parley
 * voters and a forwarding client node, each workload warmed on both sides
 * before it is timed, the two sides run one after the other.
 */
import { join } from 'node:path';
import { EtcdCluster } from '@parley/etcd';
import { Etcd3 } from 'etcd3';
import { etcdAdapter } from './etcd-adapter.js';
import { failoverTrials } from './failover.js';
import { ParleyCluster } from './parley-cluster.js';
import { cpuMsOf, hasStrace, SyscallCounter } from './proc.js';
import { atLeast, atMostAnchor, compareRow } from './rows.js';
import type { CompareRun } from './run.js';
import { quantile, spread } from './stats.js';
import { cdfChart } from './svg.js';
import { runStrongTask, type StrongTask, type StrongTaskResult, warmupOf } from './workloads.js';

/** A rate task's successful operations per second. */
function rate(r: StrongTaskResult): number {
  if (r.kind !== 'rate') throw new Error(`expected a rate, got ${r.kind}`);
  return r.ops / r.seconds;
}

/** Operations a task ran (successful or not). */
function opsOf(r: StrongTaskResult): number {
  if (r.kind === 'writes') return r.latencies.length;
  if (r.kind === 'rate') return r.ops + r.retries;
  return r.acks.length + r.errors;
}

/** Both clusters of the strong side, and the workloads run on them. */
export class StrongSide {
  private etcd: EtcdCluster | undefined;
  private parley: ParleyCluster | undefined;
  private etcdClient: Etcd3 | undefined;
  private readonly warmups: { task: string; parleyOps: number; etcdOps: number; seconds: number }[] = [];
  private readonly opts: CompareRun['opts'];
  private readonly root: string;
  private readonly rows: CompareRun['rows'];
  private readonly extra: CompareRun['extra'];
  private readonly progress: CompareRun['progress'];
  private readonly writeSvg: CompareRun['writeSvg'];

  /** `work`: the strong workloads selected (writes, cas, locks, claims, failover). */
  constructor(
    run: CompareRun,
    private readonly etcdBin: string,
    private readonly work: readonly string[],
  ) {
    this.opts = run.opts;
    this.root = run.root;
    this.rows = run.rows;
    this.extra = run.extra;
    this.progress = run.progress;
    this.writeSvg = run.writeSvg;
  }

  /** Stops both clusters (idempotent). */
  async close(): Promise<void> {
    this.etcdClient?.close();
    this.etcdClient = undefined;
    await Promise.allSettled([this.etcd?.close(), this.parley?.close()]);
  }

  private get parleyCluster(): ParleyCluster {
    return this.parley as ParleyCluster;
  }

  private get etcdCluster(): EtcdCluster {
    return this.etcd as EtcdCluster;
  }

  private get client(): Etcd3 {
    return this.etcdClient as Etcd3;
  }

  private async both(task: StrongTask): Promise<{ parley: StrongTaskResult; etcd: StrongTaskResult }> {
    // Sides run one after the other (never at once): each has both cores to itself.
    const p = await this.parleyCluster.run({ ...task, prefix: `p-${task.prefix}` });
    const e = await runStrongTask(etcdAdapter(this.client), { ...task, prefix: `e-${task.prefix}` });
    return { parley: p, etcd: e };
  }

  /** etcd's member processes now running. */
  private etcdPids(): number[] {
    return this.etcdCluster.members.flatMap((m) =>
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
  private async warm(task: StrongTask): Promise<{ parley: StrongTaskResult; etcd: StrongTaskResult }> {
    const t0 = performance.now();
    const res = await this.both(warmupOf(task, this.opts.warmOps, this.opts.warmSeconds));
    const seconds = (performance.now() - t0) / 1000;
    this.warmups.push({ task: task.prefix, parleyOps: opsOf(res.parley), etcdOps: opsOf(res.etcd), seconds });
    this.progress.step(
      `warm-up ${task.prefix}: ${opsOf(res.parley)} Parley / ${opsOf(res.etcd)} etcd ops in ${seconds.toFixed(1)} s`,
    );
    return res;
  }

  /** One timed repetition of the write loop per side, with the CPU time of every process of each side. */
  private async timedWrites(task: Extract<StrongTask, { kind: 'writes' }>): Promise<{
    parley: number[];
    etcd: number[];
    cpu: { parleyAll: number; parleyVoters: number; etcdMembers: number; etcdClient: number };
  }> {
    const pc = this.parleyCluster;
    const pids = pc.pids();
    const voters = pc.voterPids();
    const pAll0 = cpuMsOf(pids);
    const pVoters0 = cpuMsOf(voters);
    const p = await pc.run({ ...task, prefix: `p-${task.prefix}` });
    const pAll = cpuMsOf(pids) - pAll0;
    const pVoters = cpuMsOf(voters) - pVoters0;
    const members = this.etcdPids();
    const e0 = cpuMsOf(members);
    const self0 = process.cpuUsage();
    const e = await runStrongTask(etcdAdapter(this.client), { ...task, prefix: `e-${task.prefix}` });
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
  private async syscallRows(): Promise<void> {
    if (!hasStrace()) {
      process.stderr.write('\nstrace is not installed: no socket-write syscall rows (apt-get install strace)\n');
      return;
    }
    const n = this.opts.writes;
    const count = async (pids: number[], run: () => Promise<StrongTaskResult>): Promise<number[]> => {
      const counter = await SyscallCounter.attach(pids, (pid) => join(this.root, `strace-${pid}.txt`));
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
    const pc = this.parleyCluster;
    const voters = pc.voterPids().length;
    const p = await count(pc.pids(), () => pc.run({ kind: 'writes', count: n, prefix: 'p-strace' }));
    const e = await count(this.etcdPids(), () =>
      runStrongTask(etcdAdapter(this.client), { kind: 'writes', count: n, prefix: 'e-strace' }),
    );
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    this.extra.socket_writes_per_write = { parley: p, etcd: e };
    this.progress.step('socket write syscalls per write (strace)');
    this.rows.push(
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

  /** Starts both clusters, then warms and times each selected workload on both sides. */
  async run(): Promise<void> {
    this.etcd = await EtcdCluster.start(this.etcdBin, this.root);
    this.etcdClient = new Etcd3({ hosts: this.etcd.endpoints });
    this.progress.step('etcd: 3 members up');
    this.parley = await ParleyCluster.start(this.root, this.opts.lean);
    await this.parley.leaderIndex();
    this.progress.step('Parley: 3 voters + client up');
    // The first warm-up (connections, leader discovery, JIT) is the write loop; its first writes are the cold figures.
    const cold = await this.warm({ kind: 'writes', count: this.opts.writes, prefix: 'w' });

    if (this.work.includes('writes')) {
      const p50 = { p: [] as number[], e: [] as number[] };
      const p99 = { p: [] as number[], e: [] as number[] };
      const all = { p: [] as number[], e: [] as number[] };
      const cpu = {
        pAll: [] as number[],
        pVoters: [] as number[],
        eMembers: [] as number[],
        eWithClient: [] as number[],
      };
      for (let r = 0; r < this.opts.reps; r++) {
        const res = await this.timedWrites({ kind: 'writes', count: this.opts.writes, prefix: `w${r}` });
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
        this.progress.step(`writes rep ${r + 1}`);
      }
      const coldOf = (x: StrongTaskResult) => (x.kind === 'writes' ? x.latencies.slice(0, this.opts.writes) : []);
      const coldN = Math.min(coldOf(cold.parley).length, coldOf(cold.etcd).length);
      this.extra.warmups = this.warmups;
      this.rows.push(
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
      this.rows.push(
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
        ...[
          { anchor: 'etcd', anchorValue: spread(cpu.eMembers), target: atMostAnchor() },
          { anchor: 'etcd 3 members + etcd3 client (benchmark process)', anchorValue: spread(cpu.eWithClient) },
        ].map((against) =>
          compareRow({
            name: 'strong write CPU per write, every process (Parley 3 voters + client node; etcd 3 members)',
            unit: 'ms',
            better: 'lower',
            value: spread(cpu.pAll),
            ...against,
          }),
        ),
        compareRow({
          name: 'strong write CPU per write, 3 voters / 3 members only',
          unit: 'ms',
          better: 'lower',
          value: spread(cpu.pVoters),
          anchor: 'etcd',
          anchorValue: spread(cpu.eMembers),
        }),
      );
      await this.syscallRows();
      this.writeSvg(
        'compare-write-latency.svg',
        cdfChart(`Strong write latency, 1 client (${all.p.length} writes per side)`, [
          { label: 'Parley (3 voters, client = non-voter node process)', color: '#1f77b4', values: all.p },
          { label: 'etcd 3.4 (3 members, etcd3 client)', color: '#d62728', values: all.e },
        ]),
      );
    }

    if (this.work.includes('cas')) {
      for (const hot of [false, true]) {
        const v = { p: [] as number[], e: [] as number[] };
        const retries = { p: 0, e: 0 };
        await this.warm({
          kind: 'cas',
          clients: 16,
          hot,
          durationMs: this.opts.seconds * 1000,
          prefix: `cas${hot ? 'h' : 'k'}`,
        });
        for (let r = 0; r < this.opts.reps; r++) {
          const res = await this.both({
            kind: 'cas',
            clients: 16,
            hot,
            durationMs: this.opts.seconds * 1000,
            prefix: `cas${hot ? 'h' : 'k'}${r}`,
          });
          v.p.push(rate(res.parley));
          v.e.push(rate(res.etcd));
          retries.p += res.parley.kind === 'rate' ? res.parley.retries : 0;
          retries.e += res.etcd.kind === 'rate' ? res.etcd.retries : 0;
          this.progress.step(`CAS ${hot ? 'hot key' : '16 keys'} rep ${r + 1}`);
        }
        this.extra[`cas_${hot ? 'hot' : 'keys'}_mismatches`] = retries;
        this.rows.push(
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

    if (this.work.includes('locks')) {
      // The pipelined row: Parley's next acquire does not wait for the release; etcd's cycle is unchanged.
      const variants = [
        { clients: 1, pipelined: false, label: '1 client', target: 1.5 },
        { clients: 4, pipelined: false, label: '4 contending clients', target: 3 },
        { clients: 1, pipelined: true, label: '1 client, pipelined release', target: 3 },
      ];
      for (const { clients, pipelined, label, target } of variants) {
        const v = { p: [] as number[], e: [] as number[] };
        const tag = `lock${clients}${pipelined ? 'p' : ''}`;
        const task = { kind: 'locks', clients, pipelined, durationMs: this.opts.seconds * 1000 } as const;
        await this.warm({ ...task, prefix: tag });
        for (let r = 0; r < this.opts.reps; r++) {
          const res = await this.both({ ...task, prefix: `${tag}-${r}` });
          v.p.push(rate(res.parley));
          v.e.push(rate(res.etcd));
          this.progress.step(`locks ${label} rep ${r + 1}`);
        }
        this.rows.push(
          compareRow({
            name: `lock acquire+release cycles/s, ${label}`,
            unit: 'cycles/s',
            better: 'higher',
            value: spread(v.p),
            anchor: 'etcd (etcd3 lock API)',
            anchorValue: spread(v.e),
            target: atLeast(target),
          }),
        );
      }
    }

    if (this.work.includes('claims')) {
      const v = { p: [] as number[], e: [] as number[] };
      await this.warm({ kind: 'claims', clients: 16, durationMs: this.opts.seconds * 1000, prefix: 'claim' });
      for (let r = 0; r < this.opts.reps; r++) {
        const res = await this.both({
          kind: 'claims',
          clients: 16,
          durationMs: this.opts.seconds * 1000,
          prefix: `claim${r}`,
        });
        v.p.push(rate(res.parley));
        v.e.push(rate(res.etcd));
        this.progress.step(`claims rep ${r + 1}`);
      }
      this.rows.push(
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

    this.extra.warmups = this.warmups;
    if (this.work.includes('failover')) {
      const out = await failoverTrials({
        parley: this.parley,
        etcd: this.etcd,
        client: this.client,
        trials: this.opts.trials,
        step: (what) => this.progress.step(what),
      });
      this.rows.push(...out.rows);
      Object.assign(this.extra, out.extra);
      this.writeSvg('compare-failover.svg', out.svg);
    }
  }
}
