/**
 * One torture run: preflight, the cluster, the firewall, the schedule, the
 * workloads and the nemesis side by side for the run's duration, then every
 * fault healed, the final reads and convergence waits, the checks, and the
 * output — histories (JSON and EDN), schedule.json, timeline.svg, summary.txt.
 * Every process it started is killed by PID when it ends, however it ends.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { availability, STRONG_WORKLOADS } from './check/availability.js';
import { checkDurability } from './check/durability.js';
import { checkEventual } from './check/eventual.js';
import { checkLinearizable, LINEAR_WORKLOADS, type LinearResult } from './check/linear.js';
import { catchUpWindows, checkEntryTimes, checkGrantTimes, checkReportedTimes, type Violation } from './check/time.js';
import { checkWatch } from './check/watch.js';
import { type Backend, Cluster } from './cluster.js';
import { Recorder } from './history.js';
import { NemesisRunner } from './nemesis/runner.js';
import { makeSchedule, type NemesisKind, parseSchedule, type Schedule } from './nemesis/schedule.js';
import { Firewall } from './partition.js';
import { preflight } from './preflight.js';
import { ProcessTable } from './procs.js';
import { Random } from './random.js';
import { type RunResult, summaryText } from './report/summary.js';
import { timelineSvg } from './report/svg.js';
import { type Context, sleep, type Workload } from './workload.js';
import { ClaimWorkload } from './workloads/claims.js';
import { EventualWorkload } from './workloads/eventual.js';
import { LeaseWorkload } from './workloads/leases.js';
import { LockWorkload } from './workloads/locks.js';
import { RegisterWorkload } from './workloads/register.js';
import { TtlWorkload } from './workloads/ttl.js';
import { WatchWorkload } from './workloads/watch.js';

export const WORKLOADS = ['register', 'lock', 'lease', 'claim', 'ttl', 'watch', 'eventual'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

const CLI_BIN = fileURLToPath(new URL('../../cli/bin/parley.js', import.meta.url));
/** What ε allows beyond the clock offsets: the millisecond rounding of reported times and scheduling noise. */
const SKEW_MARGIN_MS = 200;

export interface RunOptions {
  readonly seed: number;
  readonly backend: Backend;
  readonly durationMs: number;
  /** Voters (raft) or etcd members (etcd). */
  readonly servers: number;
  /** Non-voters (raft), or Parley nodes on etcd. */
  readonly gateways: number;
  readonly nemeses: readonly NemesisKind[];
  readonly workloads: readonly WorkloadName[];
  readonly outDir?: string;
  readonly replay?: string;
  readonly concurrency: number;
  readonly ttlSeconds: readonly [number, number];
  readonly maxClockOffsetMs: number;
  readonly outageMs: readonly [number, number];
  readonly quietMs: readonly [number, number];
  readonly tailMs: number;
  readonly thinkMs: number;
  readonly log: (line: string) => void;
}

function makeWorkload(name: WorkloadName): Workload {
  switch (name) {
    case 'register':
      return new RegisterWorkload();
    case 'lock':
      return new LockWorkload();
    case 'lease':
      return new LeaseWorkload();
    case 'claim':
      return new ClaimWorkload();
    case 'ttl':
      return new TtlWorkload();
    case 'watch':
      return new WatchWorkload();
    case 'eventual':
      return new EventualWorkload();
  }
}

/** The command that replays a run's schedule (and its seed, so the workloads' choices too). */
export function replayCommand(o: RunOptions, scheduleFile: string): string {
  return [
    'npm run torture --',
    `--replay ${scheduleFile}`,
    `--seed ${o.seed}`,
    `--backend ${o.backend}`,
    `--servers ${o.servers}`,
    `--gateways ${o.gateways}`,
    `--workloads ${o.workloads.join(',')}`,
    `--concurrency ${o.concurrency}`,
    `--ttl ${o.ttlSeconds.join('-')}`,
    `--max-clock-offset-ms ${o.maxClockOffsetMs}`,
  ].join(' ');
}

export async function runTorture(o: RunOptions): Promise<RunResult> {
  const workloads =
    o.workloads.includes('watch') && !o.workloads.includes('register')
      ? [...o.workloads, 'register' as const]
      : [...o.workloads];
  const replayed: Schedule | undefined =
    o.replay === undefined ? undefined : parseSchedule(readFileSync(o.replay, 'utf8'));
  const wanted = replayed ? [...new Set(replayed.steps.map((s) => s.kind))] : o.nemeses;
  const pre = preflight(wanted, o.backend);
  const notes = pre.warnings.map((w) => `nemesis skipped: ${w}`);
  for (const n of notes) o.log(`WARNING: ${n}`);
  const outDir = resolve(o.outDir ?? mkdtempSync(join(tmpdir(), 'parley-torture-')));
  mkdirSync(outDir, { recursive: true });
  // The nodes run under uids of their own: they must be able to reach their data dirs.
  chmodSync(outDir, 0o755);
  const runDir = join(outDir, 'run');
  mkdirSync(runDir, { recursive: true });
  const procs = ProcessTable.open(join(outDir, 'run-state.json'));
  const partitions = pre.nemeses.includes('partition');
  const uidBase = partitions ? 30_000 + (process.pid % 1_000) * 20 : undefined;
  const skewMs = (pre.nemeses.includes('clock') ? 2 * o.maxClockOffsetMs : 0) + SKEW_MARGIN_MS;
  try {
    const cluster = await Cluster.create({
      runDir,
      procs,
      cliBin: CLI_BIN,
      backend: o.backend,
      servers: o.servers,
      gateways: o.gateways,
      ...(pre.faketimeLib === undefined || !pre.nemeses.includes('clock') ? {} : { faketimeLib: pre.faketimeLib }),
      ...(pre.nemeses.includes('disk-full') || pre.nemeses.includes('disk-ro') ? { tmpfsMb: 256 } : {}),
      ...(uidBase === undefined ? {} : { uidBase }),
      ...(pre.etcdBin === undefined ? {} : { etcdBin: pre.etcdBin }),
    });
    let firewall: Firewall | undefined;
    if (partitions) {
      const chain = `PTORTURE${process.pid}`;
      procs.setChain(chain);
      firewall = Firewall.create(chain, uidBase as number, cluster.endpoints());
    }
    o.log(
      `starting ${cluster
        .all()
        .map((t) => t.name)
        .join(' ')} (output in ${outDir})`,
    );
    const phase = phases();
    await cluster.start();
    phase.mark('startup');
    const schedule =
      replayed ??
      makeSchedule(
        {
          seed: o.seed,
          backend: o.backend,
          durationMs: o.durationMs,
          nemeses: pre.nemeses,
          maxClockOffsetMs: o.maxClockOffsetMs,
          outageMs: o.outageMs,
          quietMs: o.quietMs,
          tailMs: o.tailMs,
        },
        {
          servers: cluster.servers.map((s) => s.name),
          clockNodes: pre.nemeses.includes('clock') ? cluster.nodes.map((n) => n.name) : [],
          diskNodes:
            o.backend === 'raft' ? cluster.nodes.filter((n) => n.spec.role === 'voter').map((n) => n.name) : [],
        },
      );
    const scheduleFile = join(outDir, 'schedule.json');
    writeFileSync(scheduleFile, `${JSON.stringify(schedule, null, 2)}\n`);
    const rec = new Recorder();
    const ctx: Context = {
      cluster,
      rec,
      rnd: new Random(o.seed).fork('workloads'),
      options: {
        concurrency: o.concurrency,
        skewMs,
        ttlSeconds: o.ttlSeconds,
        thinkMs: o.thinkMs,
        unavailableIsDefinite: o.backend === 'raft',
      },
      stopping: { value: false },
    };
    const wl = new Map(workloads.map((n) => [n, makeWorkload(n)] as const));
    o.log(`running ${[...wl.keys()].join(', ')} for ${o.durationMs / 1000} s under ${schedule.steps.length} faults`);
    const runs = new Map([...wl].map(([n, w]) => [n, w.run(ctx)] as const));
    const nemesis = new NemesisRunner(cluster, rec, firewall, o.log);
    // A drawn schedule keeps to the nominal length; a replayed one plays every step.
    const unplayed = await nemesis.run(schedule, replayed ? Number.POSITIVE_INFINITY : o.durationMs);
    if (unplayed > 0) {
      notes.push(`${unplayed} of ${schedule.steps.length} faults left unplayed: the run reached its nominal length`);
    }
    phase.mark('faults');
    // The tail: the workloads go on after the last heal (takes right after an outage are the point),
    // and the run lasts at least its nominal length.
    await sleep(Math.max(o.tailMs, o.durationMs - rec.now()));
    ctx.stopping.value = true;
    const faultEnd = rec.now();
    phase.mark('tail');
    for (const [n, r] of runs) if (n !== 'watch') await r;
    phase.mark('calls in flight');
    const healNotes = await nemesis.healAll();
    notes.push(...healNotes.filter((n) => !n.includes('back in')).map((n) => `final heal: ${n}`));
    await cluster.waitHealthy(60_000).catch((err: Error) => notes.push(`after the heal: ${err.message}`));
    phase.mark('heal');
    const finalFrom = rec.now();
    for (const name of ['register', 'eventual', 'watch'] as const) {
      await wl.get(name)?.final?.(ctx);
      phase.mark(`final ${name}`);
    }
    await runs.get('watch');
    o.log('checking');
    notes.push(`time: ${phase.text()}`);
    return await check({
      o,
      outDir,
      rec,
      wl,
      schedule,
      scheduleFile,
      notes,
      skewMs,
      faultEnd,
      finalFrom,
      processes: cluster.all().map((t) => t.name),
    });
  } finally {
    await procs.close();
  }
}

/** Wall time per phase of the run, for the summary (where a slow run spent its time). */
function phases(): { mark(name: string): void; text(): string } {
  let last = performance.now();
  const out: string[] = [];
  return {
    mark(name) {
      const now = performance.now();
      out.push(`${name} ${((now - last) / 1000).toFixed(1)} s`);
      last = now;
    },
    text: () => out.join(', '),
  };
}

interface CheckInput {
  readonly o: RunOptions;
  readonly outDir: string;
  readonly rec: Recorder;
  readonly wl: ReadonlyMap<WorkloadName, Workload>;
  readonly schedule: Schedule;
  readonly scheduleFile: string;
  readonly notes: string[];
  readonly skewMs: number;
  readonly faultEnd: number;
  readonly finalFrom: number;
  readonly processes: readonly string[];
}

async function check(c: CheckInput): Promise<RunResult> {
  const { rec, wl, skewMs } = c;
  const checkStart = performance.now();
  const histories = join(c.outDir, 'histories');
  mkdirSync(histories, { recursive: true });
  const violations: Violation[] = [];
  const inconclusive: string[] = [];
  const linear: LinearResult[] = [];
  for (const name of LINEAR_WORKLOADS) {
    if (!wl.has(name as WorkloadName)) continue;
    const l = await checkLinearizable(rec, name, histories, 300_000);
    linear.push(l);
    const verdicts = [
      ['parley-check', l.parleyCheck, l.parleyCheckDetail],
      ['own checker', l.own, l.ownDetail],
      ...(l.timeAware === undefined ? [] : [['parley-check time-aware', l.timeAware, l.timeAwareDetail ?? '']]),
    ] as const;
    for (const [who, verdict, detail] of verdicts) {
      if (verdict === 'not linearizable')
        violations.push({
          check: 'linearizability',
          workload: name,
          key: '',
          atMs: 0,
          message: `${who}: not linearizable: ${detail}`,
        });
      else if (verdict !== 'linearizable') inconclusive.push(`${name}: ${who} ${verdict}: ${detail}`);
    }
    if (l.disagree)
      violations.push({
        check: 'checker agreement',
        workload: name,
        key: '',
        atMs: 0,
        message: `parley-check says ${l.parleyCheck}, the own checker ${l.own}`,
      });
  }
  if (wl.has('lock'))
    violations.push(...checkGrantTimes('lock', rec.of('lock'), { holder: 'owner', token: 'fence' }, skewMs));
  if (wl.has('lease'))
    violations.push(...checkGrantTimes('lease', rec.of('lease'), { holder: 'holder', token: 'epoch' }, skewMs));
  if (wl.has('ttl')) {
    const strong = rec.ops.filter((x) => STRONG_WORKLOADS.includes(x.workload));
    const t = checkEntryTimes('ttl', rec.of('ttl'), skewMs, catchUpWindows(strong));
    violations.push(...t.violations);
    if (t.excused > 0)
      c.notes.push(
        `ttl: ${t.excused} reads found an entry late during a catch-up after a leaderless stretch (excused)`,
      );
  }
  for (const name of ['ttl', 'lock', 'lease'] as const)
    if (wl.has(name)) violations.push(...checkReportedTimes(name, rec.of(name), skewMs));
  if (wl.has('register')) violations.push(...checkDurability('register', rec.of('register'), c.finalFrom).violations);
  const watch = wl.get('watch') as WatchWorkload | undefined;
  if (watch) violations.push(...checkWatch(watch, rec.of('register')).violations);
  const eventual = wl.get('eventual') as EventualWorkload | undefined;
  if (eventual) {
    violations.push(...checkEventual(eventual, rec.of('eventual')).violations);
    if (eventual.convergeMs !== undefined)
      c.notes.push(`eventual: converged ${Math.round(eventual.convergeMs)} ms after the final heal`);
  }
  const avail = availability(rec.faults, rec.ops);
  const workloads = [...wl.keys()].map((name) => {
    const ops = rec.of(name);
    return {
      name,
      ops: ops.length,
      ok: ops.filter((x) => x.type === 'ok').length,
      fail: ops.filter((x) => x.type === 'fail').length,
      info: ops.filter((x) => x.type === 'info').length,
    };
  });
  if (watch) {
    const i = workloads.findIndex((w) => w.name === 'watch');
    if (i >= 0)
      workloads[i] = {
        name: 'watch',
        ops: watch.events.length,
        ok: watch.streams.filter((s) => s.connectedMs !== null).length,
        fail: watch.streams.filter((s) => s.connectedMs === null).length,
        info: watch.restarts.length,
      };
    c.notes.push(
      `watch: ${watch.events.length} events over ${watch.streams.length} streams (ok column: streams opened; unknown: restarts without a resume point)`,
    );
  }
  c.notes.push(`checks took ${((performance.now() - checkStart) / 1000).toFixed(1)} s`);
  const result: RunResult = {
    seed: c.o.seed,
    backend: c.o.backend,
    durationMs: c.o.durationMs,
    outDir: c.outDir,
    processes: c.processes,
    skewMs,
    workloads,
    linear,
    violations,
    availability: avail,
    notes: c.notes,
    inconclusive,
    passed: violations.length === 0 && inconclusive.length === 0,
    replay: replayCommand(c.o, c.scheduleFile),
  };
  writeFileSync(join(histories, 'ops.json'), `${JSON.stringify(rec.ops)}\n`);
  writeFileSync(join(histories, 'faults.json'), `${JSON.stringify(rec.faults, null, 1)}\n`);
  if (watch)
    writeFileSync(
      join(histories, 'watch.json'),
      `${JSON.stringify({ streams: watch.streams, events: watch.events, restarts: watch.restarts })}\n`,
    );
  if (eventual)
    writeFileSync(
      join(histories, 'eventual.json'),
      `${JSON.stringify(Object.fromEntries([...eventual.snapshots].map(([n, s]) => [n, Object.fromEntries(s)])))}\n`,
    );
  writeFileSync(
    join(c.outDir, 'result.json'),
    `${JSON.stringify({ ...result, availability: avail.map((a) => ({ ...a, fault: a.fault.id })) }, null, 1)}\n`,
  );
  writeFileSync(
    join(c.outDir, 'timeline.svg'),
    timelineSvg(
      rec.ops,
      rec.faults,
      violations,
      [...wl.keys()].filter((n) => n !== 'watch'),
      Math.max(rec.now(), c.faultEnd),
    ),
  );
  writeFileSync(join(c.outDir, 'summary.txt'), summaryText(result));
  return result;
}
