/**
 * `npm run torture -- [options]`: one torture run (see docs/torture.md).
 * Exit status: 0 pass, 1 a violation (the seed and the replay command are
 * printed), 2 inconclusive or the harness failed.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { NEMESES, type NemesisKind } from './nemesis/schedule.js';
import { summaryText } from './report/summary.js';
import { type RunOptions, runTorture, WORKLOADS, type WorkloadName } from './run.js';
import { SHORT_SCHEDULE, shortOptions } from './short.js';

const int = (name: string, min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new InvalidArgumentError(`${name} must be an integer in ${min}..${max}`);
  return n;
};

const range =
  (name: string, min: number, max: number) =>
  (v: string): [number, number] => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(v);
    const lo = Number(m?.[1]);
    const hi = Number(m?.[2] ?? m?.[1]);
    if (!m || lo < min || hi > max || lo > hi) throw new InvalidArgumentError(`${name} is LO-HI within ${min}..${max}`);
    return [lo, hi];
  };

function list<T extends string>(name: string, allowed: readonly T[]) {
  return (v: string): T[] => {
    const items = v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    for (const i of items)
      if (!(allowed as readonly string[]).includes(i))
        throw new InvalidArgumentError(`${name}: unknown '${i}' (one of ${allowed.join(', ')})`);
    return items as T[];
  };
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = new Command('torture')
    .description('Jepsen-style torture of parley serve processes on loopback (docs/torture.md)')
    .option(
      '--seed <n>',
      'seed of the fault schedule and the workloads (default: from the clock)',
      int('--seed', 0, 2 ** 31 - 1),
    )
    .option('--duration <seconds>', 'length of the fault phase', int('--duration', 10, 86_400), 60)
    .addOption(new Option('--backend <backend>', 'strong backend').choices(['raft', 'etcd']).default('raft'))
    .option('--servers <n>', 'Raft voters, or etcd members', int('--servers', 1, 7), 3)
    .option(
      '--gateways <n>',
      'Parley nodes outside the Raft group (raft), or Parley nodes on etcd',
      int('--gateways', 0, 8),
      1,
    )
    .option('--nemeses <list>', `faults to draw from (${NEMESES.join(',')})`, list('--nemeses', NEMESES), [...NEMESES])
    .option('--workloads <list>', `workloads (${WORKLOADS.join(',')})`, list('--workloads', WORKLOADS), [...WORKLOADS])
    .option('--out <dir>', 'where histories, schedule.json, timeline.svg and summary.txt go (default: a new temp dir)')
    .option('--replay <schedule.json>', "run this schedule file (a failed run's) instead of drawing one")
    .option('--concurrency <n>', 'client processes per workload', int('--concurrency', 1, 32), 4)
    .option('--ttl <lo-hi>', 'TTL range of locks, leases and entries (s)', range('--ttl', 1, 3600), [3, 10])
    .option(
      '--max-clock-offset-ms <n>',
      'clock offsets are drawn from ±n',
      int('--max-clock-offset-ms', 0, 60_000),
      500,
    )
    .option('--outage <lo-hi>', 'whole-cluster outage length (s)', range('--outage', 1, 3600), [20, 45])
    .option('--quiet <lo-hi>', 'quiet time between faults (s)', range('--quiet', 0, 3600), [3, 8])
    .option('--tail <seconds>', 'quiet time kept after the last fault', int('--tail', 0, 3600), 15)
    .option('--short', 'the short form npm test runs (its own fixed schedule and options; only --out applies)')
    .option(
      '--think-ms <n>',
      'pause between a client process calls is drawn from 0..n',
      int('--think-ms', 0, 60_000),
      50,
    )
    .exitOverride();
  try {
    program.parse(argv, { from: 'user' });
  } catch {
    return 2;
  }
  const opts = program.opts<{
    seed?: number;
    duration: number;
    backend: 'raft' | 'etcd';
    servers: number;
    gateways: number;
    nemeses: NemesisKind[];
    workloads: WorkloadName[];
    out?: string;
    replay?: string;
    concurrency: number;
    ttl: [number, number];
    maxClockOffsetMs: number;
    outage: [number, number];
    quiet: [number, number];
    tail: number;
    thinkMs: number;
    short?: boolean;
  }>();
  const log = (line: string) => process.stderr.write(`torture: ${line}\n`);
  if (opts.short) {
    const dir = opts.out ?? mkdtempSync(join(tmpdir(), 'parley-torture-short-'));
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
    const file = join(dir, 'short-schedule.json');
    writeFileSync(file, JSON.stringify(SHORT_SCHEDULE));
    return report(shortOptions(file, dir, log), SHORT_SCHEDULE.seed);
  }
  const seed = opts.seed ?? Math.floor(Date.now() % 2 ** 31);
  const options: RunOptions = {
    seed,
    backend: opts.backend,
    durationMs: opts.duration * 1000,
    servers: opts.servers,
    gateways: opts.gateways,
    nemeses: opts.nemeses,
    workloads: opts.workloads,
    ...(opts.out === undefined ? {} : { outDir: opts.out }),
    ...(opts.replay === undefined ? {} : { replay: opts.replay }),
    concurrency: opts.concurrency,
    ttlSeconds: opts.ttl,
    maxClockOffsetMs: opts.maxClockOffsetMs,
    outageMs: [opts.outage[0] * 1000, opts.outage[1] * 1000],
    quietMs: [opts.quiet[0] * 1000, opts.quiet[1] * 1000],
    tailMs: opts.tail * 1000,
    thinkMs: opts.thinkMs,
    log,
  };
  return report(options, seed);
}

async function report(options: RunOptions, seed: number): Promise<number> {
  process.stderr.write(`torture: seed ${seed}\n`);
  try {
    const result = await runTorture(options);
    process.stdout.write(summaryText(result));
    if (result.violations.length > 0) return 1;
    return result.passed ? 0 : 2;
  } catch (err) {
    process.stderr.write(
      `torture: the run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n(seed ${seed})\n`,
    );
    return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
