/**
 * `parley-sim` / `npm run sim`: runs scenario families over many seeds.
 *
 *     npm run sim -- --scenario <glob> --seeds <N> [--seed S] [--json FILE] [--jobs N] [--report-dir DIR] [--no-report]
 *
 * `--seed S` is the first seed (default 1); alone it replays that one seed.
 * Prints a progress bar on a terminal, then
 * `scenarios: X, seeds: N, violations: V, liveness failures: L, unknown checks: U`, and one
 * line per failure (and per check that ended `unknown`) with the command
 * that replays it. Exits 1 on any violation, liveness failure or `unknown`
 * check, 2 on a usage error.
 */
import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CheckerSelfTestError } from '@parley/check';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { listScenarios, matchScenarios } from './registry.js';
import { writeReport } from './report.js';
import './families/index.js';
import { guardLines, runSweep, summaryLine, sweepPassed } from './sweep.js';

export interface SimCliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly isTTY: boolean;
}

const defaultIo: SimCliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  isTTY: process.stderr.isTTY === true,
};

const DEFAULT_REPORT_DIR = fileURLToPath(new URL('../../../simulations/reports/', import.meta.url));

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

function reportName(glob: string): string {
  return `sim-${glob.replace(/\*/g, 'all').replace(/[^a-z0-9-]+/gi, '_')}`;
}

function bar(done: number, total: number, label: string): string {
  const width = 30;
  const filled = Math.round((done / Math.max(1, total)) * width);
  return `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${label}`.padEnd(80);
}

/** Runs the CLI; resolves to the exit code. */
export async function main(argv: readonly string[] = process.argv.slice(2), io: SimCliIo = defaultIo): Promise<number> {
  const program = new Command('parley-sim')
    .description('Runs Parley simulation scenarios over many seeds.')
    .option('--scenario <glob>', 'scenario names, comma-separated globs (crdt-*, raft-*)', '*')
    .option('--seeds <N>', 'seeds per scenario', positiveInt)
    .option('--seed <S>', 'first seed (alone: replay that seed)', positiveInt)
    .option('--json <file>', 'write the summary as JSON')
    .option('--report-dir <dir>', 'where the markdown and SVG report go', DEFAULT_REPORT_DIR)
    .option('--no-report', 'do not write a report')
    .option('--jobs <N>', 'worker threads (default: available cores)', positiveInt)
    .option('--list', 'list the registered scenarios and exit')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) });
  let opts: {
    scenario: string;
    seeds?: number;
    seed?: number;
    jobs?: number;
    json?: string;
    reportDir: string;
    report: boolean;
    list?: boolean;
  };
  try {
    program.parse([...argv], { from: 'user' });
    opts = program.opts();
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  if (opts.list) {
    for (const s of listScenarios()) io.stdout(`${s.name.padEnd(24)} ${s.description}\n`);
    return 0;
  }
  const scenarios = matchScenarios(opts.scenario);
  if (scenarios.length === 0) {
    io.stderr(`no scenario matches '${opts.scenario}' (try --list)\n`);
    return 2;
  }
  const firstSeed = opts.seed ?? 1;
  const seeds = opts.seeds ?? (opts.seed !== undefined ? 1 : 100);
  if (seeds < 1) {
    io.stderr('--seeds must be at least 1\n');
    return 2;
  }
  const started = performance.now();
  let result: Awaited<ReturnType<typeof runSweep>>;
  try {
    result = await runSweep({
      scenarios,
      firstSeed,
      seeds,
      jobs: opts.jobs ?? availableParallelism(),
      onResult: (r, done, total) => {
        if (io.isTTY) io.stderr(bar(done, total, `${r.scenario} seed ${r.seed}`));
      },
    });
  } catch (err) {
    if (!(err instanceof CheckerSelfTestError)) throw err;
    io.stderr(`${err.message}\n`);
    return 1;
  }
  if (io.isTTY) io.stderr(`\r${' '.repeat(80)}\r`);
  const wallSeconds = (performance.now() - started) / 1000;
  const { summary } = result;
  io.stdout(`${summaryLine(summary)}\n`);
  for (const f of summary.failures) {
    io.stdout(`  ${f.kind} ${f.scenario} seed ${f.seed}: ${f.message}\n`);
    io.stdout(`    replay: npm run sim -- --scenario ${f.scenario} --seed ${f.seed}\n`);
  }
  for (const line of guardLines(summary)) io.stdout(`${line}\n`);
  for (const u of summary.inconclusive) {
    io.stdout(`  unknown ${u.scenario} seed ${u.seed}: ${u.checks.join('; ')}\n`);
    io.stdout(`    replay: npm run sim -- --scenario ${u.scenario} --seed ${u.seed}\n`);
  }
  if (opts.json) await writeFile(opts.json, `${JSON.stringify(summary, null, 2)}\n`);
  if (opts.report) {
    const command = `npm run sim -- --scenario '${opts.scenario}' --seeds ${seeds}${opts.seed !== undefined ? ` --seed ${firstSeed}` : ''}`;
    const path = await writeReport(opts.reportDir, reportName(opts.scenario), result, wallSeconds, command);
    io.stdout(`report: ${path} (${wallSeconds.toFixed(1)} s)\n`);
  }
  return sweepPassed(summary) ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main();
}
