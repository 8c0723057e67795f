/**
 * `parley-check`: checks recorded histories for linearizability.
 *
 *     parley-check --model <name> [--format F] [--independent] [--json]
 *                  [--timeout-ms N] [--max-memo-mb N] FILE...
 *
 * Reads Porcupine logs (etcd `jepsen.util` lines, kv EDN lines), Knossos EDN and
 * Jepsen `#jepsen.history.Op{…}` records (format chosen by the file's structure,
 * or `--format`), prints one line per file — `linearizable`, `not linearizable`
 * or `unknown` — and exits 0 when every file is linearizable, 1 when any is not,
 * 2 otherwise (a limit was hit, or a file cannot be read, decoded or parsed, or
 * holds no history). Files are decoded as strict UTF-8.
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  checkLinearizability,
  DEFAULT_MAX_MEMO_BYTES,
  describeOperation,
  type LinearizabilityOptions,
  type LinearizabilityResult,
} from './linearizability.js';
import { getModel, MODELS } from './models/index.js';
import { decodeHistoryBytes, HISTORY_FORMATS, type HistoryFormat, parseHistory } from './parse.js';

export const EXIT_LINEARIZABLE = 0;
export const EXIT_NOT_LINEARIZABLE = 1;
export const EXIT_UNKNOWN = 2;

export interface CheckCliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** The file's bytes (decoded as strict UTF-8), or its text. */
  readonly readFile: (path: string) => Promise<Uint8Array | string>;
}

const defaultIo: CheckCliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  readFile: (p) => readFile(p),
};

/** One file's outcome, as printed with `--json`. */
export interface FileReport {
  readonly file: string;
  readonly verdict: LinearizabilityResult['verdict'] | 'error';
  readonly format?: HistoryFormat;
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

function parseMemoMb(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0 || n > 1_000_000)
    throw new InvalidArgumentError('must be a positive integer (MiB)');
  return n;
}

/** Runs the CLI on `argv` (without the node and script paths) and returns the exit code. */
export async function runCheckCli(argv: readonly string[], io: CheckCliIo = defaultIo): Promise<number> {
  const program = new Command('parley-check')
    .description('Check histories for linearizability (Porcupine logs, Knossos EDN).')
    .addOption(
      new Option('-m, --model <name>', 'the sequential model').choices(Object.keys(MODELS)).makeOptionMandatory(),
    )
    .addOption(
      new Option('-f, --format <format>', "the files' format (auto: by the file's structure)")
        .choices(['auto', ...HISTORY_FORMATS])
        .default('auto'),
    )
    .option('--independent', "Jepsen's independent keys: values are [key value]; each key is checked on its own")
    .option('--json', 'print a JSON report instead of one line per file')
    .option('--timeout-ms <n>', 'give up on a file after N ms (verdict unknown)', parseTimeout)
    .option(
      '--max-memo-mb <n>',
      `give up on a key when its memo holds N MiB (verdict unknown; default ${DEFAULT_MAX_MEMO_BYTES / 2 ** 20})`,
      parseMemoMb,
    )
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
  const opts = program.opts<{
    model: string;
    format: HistoryFormat | 'auto';
    independent?: boolean;
    json?: boolean;
    timeoutMs?: number;
    maxMemoMb?: number;
  }>();
  const model = getModel(opts.model)!;
  const limits: LinearizabilityOptions = {
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
    ...(opts.maxMemoMb === undefined ? {} : { maxMemoBytes: opts.maxMemoMb * 2 ** 20 }),
  };
  const reports: FileReport[] = [];

  for (const file of program.args) {
    let report: FileReport;
    try {
      const content = await io.readFile(file);
      const text = typeof content === 'string' ? content : decodeHistoryBytes(content);
      const { format, events } = parseHistory(text, {
        format: opts.format,
        ...(opts.independent ? { independent: true } : {}),
      });
      const r = checkLinearizability(model, events, limits);
      const ce = r.counterexample;
      report = {
        file,
        verdict: r.verdict,
        format,
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
