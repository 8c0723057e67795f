/**
 * `parley-check`: checks recorded histories for linearizability.
 *
 *     parley-check --model <name> [--json] [--timeout-ms N] FILE...
 *
 * Reads Porcupine logs (etcd `jepsen.util` lines, kv EDN lines) and Knossos EDN,
 * prints one line per file — `linearizable`, `not linearizable` or `unknown` —
 * and exits 0 when every file is linearizable, 1 when any is not, 2 otherwise
 * (a timeout or a file that cannot be read or parsed).
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { checkLinearizability, describeOperation, type LinearizabilityResult } from '../check/linearizability.js';
import { getModel, MODELS } from '../check/models.js';
import { parseHistory } from '../check/parse.js';

export const EXIT_LINEARIZABLE = 0;
export const EXIT_NOT_LINEARIZABLE = 1;
export const EXIT_UNKNOWN = 2;

export interface CheckCliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly readFile: (path: string) => Promise<string>;
}

const defaultIo: CheckCliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  readFile: (p) => readFile(p, 'utf8'),
};

/** One file's outcome, as printed with `--json`. */
export interface FileReport {
  readonly file: string;
  readonly verdict: LinearizabilityResult['verdict'] | 'error';
  readonly operations?: number;
  readonly partitions?: number;
  readonly steps?: number;
  readonly elapsedMs?: number;
  readonly reason?: string;
  readonly error?: string;
  readonly counterexample?: {
    readonly key: string | null;
    readonly linearized: number;
    readonly blocked: string | null;
  };
}

function parseTimeout(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer (milliseconds)');
  return n;
}

/** Runs the CLI on `argv` (without the node and script paths) and returns the exit code. */
export async function runCheckCli(argv: readonly string[], io: CheckCliIo = defaultIo): Promise<number> {
  const program = new Command('parley-check')
    .description('Check histories for linearizability (Porcupine logs, Knossos EDN).')
    .addOption(
      new Option('-m, --model <name>', 'the sequential model').choices(Object.keys(MODELS)).makeOptionMandatory(),
    )
    .option('--json', 'print a JSON report instead of one line per file')
    .option('--timeout-ms <n>', 'give up on a file after N ms (verdict unknown)', parseTimeout)
    .argument('<files...>', 'history files')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .addHelpText(
      'after',
      `\nModels:\n${Object.values(MODELS)
        .map((m) => `  ${m.name.padEnd(14)} ${m.description}`)
        .join('\n')}\n\nExit: 0 all linearizable, 1 any not linearizable, 2 unknown or unreadable.`,
    );

  try {
    program.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : EXIT_UNKNOWN;
    }
    throw err;
  }
  const opts = program.opts<{ model: string; json?: boolean; timeoutMs?: number }>();
  const model = getModel(opts.model)!;
  const reports: FileReport[] = [];

  for (const file of program.args) {
    let report: FileReport;
    try {
      const text = await io.readFile(file);
      const { events } = parseHistory(text);
      const r = checkLinearizability(model, events, opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs });
      const ce = r.counterexample;
      report = {
        file,
        verdict: r.verdict,
        operations: r.operations,
        partitions: r.partitions,
        steps: r.steps,
        elapsedMs: Math.round(r.elapsedMs),
        ...(r.reason === undefined ? {} : { reason: r.reason }),
        ...(ce === undefined
          ? {}
          : {
              counterexample: {
                key: ce.key ?? null,
                linearized: ce.linearized.length,
                blocked: ce.blocked === undefined ? null : describeOperation(ce.blocked),
              },
            }),
      };
    } catch (err) {
      report = { file, verdict: 'error', error: err instanceof Error ? err.message : String(err) };
    }
    reports.push(report);
    if (!opts.json) io.stdout(`${formatLine(report)}\n`);
  }

  const code = exitCode(reports);
  if (opts.json) io.stdout(`${JSON.stringify({ model: model.name, exitCode: code, files: reports }, null, 2)}\n`);
  return code;
}

function formatLine(r: FileReport): string {
  if (r.verdict === 'error') return `${r.file}: error: ${r.error}`;
  const detail = `${r.operations} ops, ${r.elapsedMs} ms${r.reason ? `, ${r.reason}` : ''}`;
  const why = r.counterexample?.blocked ? `; cannot linearize ${r.counterexample.blocked}` : '';
  return `${r.file}: ${r.verdict} (${detail}${why})`;
}

/** 1 if any file is not linearizable; else 2 if any is unknown or unreadable; else 0. */
export function exitCode(reports: readonly FileReport[]): number {
  if (reports.some((r) => r.verdict === 'not linearizable')) return EXIT_NOT_LINEARIZABLE;
  if (reports.some((r) => r.verdict !== 'linearizable')) return EXIT_UNKNOWN;
  return EXIT_LINEARIZABLE;
}

/** Entry point for `bin/parley-check.js`. */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  // A closed pipe (`parley-check ... | head`) ends the output, not the process with a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  process.exitCode = await runCheckCli(argv);
}
