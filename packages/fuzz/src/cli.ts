/**
 * `npm run fuzz` — fuzz every Parley decoder.
 *
 *   npm run fuzz -- [--iterations N] [--seed S] [--decoder PATTERNS] [--iteration I]
 *                   [--corpus DIR] [--json FILE] [--list]
 *
 * --iterations  inputs in total, split across the selected decoders by their share (default 200,000)
 * --seed        the run's seed (default: derived from the clock, and printed)
 * --decoder     comma-separated names, `*` as a wildcard: `crdt.*,net.FrameReader` (default: all)
 * --iteration   replay one iteration of one decoder (with --seed and --decoder) and print its verdict
 * --corpus      where failing inputs are saved (default packages/fuzz/corpus/found)
 * --json        write the per-decoder figures as JSON
 *
 * Every failure prints its decoder, seed and iteration, and the command that replays it.
 * Exit status 1 when any input broke the contract.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { checkInput, checkValid } from './contract.js';
import { hex } from './equal.js';
import { type Failure, makeInput, Pool, split, type TargetStats } from './runner.js';
import type { AnyTarget } from './target.js';
import { selectTargets, TARGETS } from './targets/index.js';
import type { WorkerInput, WorkerMessage, WorkItem } from './worker.js';

const HANG_MS = 60_000;
const here = dirname(fileURLToPath(import.meta.url));
const DEFAULT_CORPUS = resolve(here, '../corpus/found');

interface Options {
  iterations: number;
  seed: number;
  decoder: string | undefined;
  iteration: number | undefined;
  corpus: string;
  json: string | undefined;
  list: boolean;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = {
    iterations: 200_000,
    seed: Date.now() % 1_000_000_007,
    decoder: undefined,
    iteration: undefined,
    corpus: DEFAULT_CORPUS,
    json: undefined,
    list: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    const int = () => {
      const v = Number(value().replace(/_/g, ''));
      if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${arg} needs a non-negative integer`);
      return v;
    };
    if (arg === '--iterations') opts.iterations = int();
    else if (arg === '--seed') opts.seed = int();
    else if (arg === '--decoder') opts.decoder = value();
    else if (arg === '--iteration') opts.iteration = int();
    else if (arg === '--corpus') opts.corpus = resolve(value());
    else if (arg === '--json') opts.json = resolve(value());
    else if (arg === '--list') opts.list = true;
    else throw new Error(`unknown option ${arg} (see packages/fuzz/README.md)`);
  }
  return opts;
}

function saveInput(corpus: string, f: Pick<Failure, 'decoder' | 'kind' | 'seed' | 'iteration' | 'input'>): string {
  const dir = join(corpus, f.decoder);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${f.kind}-s${f.seed}-i${f.iteration}.bin`);
  writeFileSync(file, f.input);
  return file;
}

function report(f: Failure, corpus: string): void {
  const file = f.input.length > 0 ? saveInput(corpus, f) : '(none)';
  console.log(
    [
      `FAIL ${f.decoder} seed=${f.seed} iteration=${f.iteration} kind=${f.kind}`,
      `  ${f.message}`,
      `  replay: npm run fuzz -- --decoder ${f.decoder} --seed ${f.seed} --iteration ${f.iteration}`,
      `  input (${f.input.length} bytes): ${hex(f.input, 64)}`,
      `  saved: ${file}`,
      ...(f.stack
        ? f.stack
            .split('\n')
            .slice(0, 8)
            .map((l) => `    ${l}`)
        : []),
    ].join('\n'),
  );
}

function replay(opts: Options, targets: AnyTarget[]): number {
  if (targets.length !== 1) throw new Error('--iteration needs --decoder naming exactly one decoder');
  const target = targets[0] as AnyTarget;
  const it = makeInput(target, new Pool(target, opts.seed), opts.seed, opts.iteration as number);
  const out = it.valid ? checkValid(target, it.valid.value, it.input) : checkInput(target, it.input);
  console.log(`${target.name} seed=${opts.seed} iteration=${opts.iteration}: ${it.valid ? 'valid' : 'mutated'} input`);
  console.log(`input (${it.input.length} bytes): ${hex(it.input, 512)}`);
  console.log(JSON.stringify(out, null, 2));
  if (out.status !== 'failed') return 0;
  console.log(
    `saved: ${saveInput(opts.corpus, { ...out, decoder: target.name, seed: opts.seed, iteration: opts.iteration as number, input: it.input })}`,
  );
  return 1;
}

function pad(s: string | number, n: number): string {
  return String(s).padStart(n);
}

function summary(all: TargetStats[], wallMs: number): void {
  console.log('');
  console.log(
    `${'decoder'.padEnd(28)}${pad('inputs', 12)}${pad('accepted', 10)}${pad('rejected', 10)}${pad('failures', 9)}${pad('s', 8)}${pad('inputs/s', 10)}`,
  );
  for (const s of all) {
    const rejected = Object.values(s.rejected).reduce((a, b) => a + (b ?? 0), 0);
    console.log(
      `${s.decoder.padEnd(28)}${pad(s.iterations.toLocaleString('en-US'), 12)}${pad(s.accepted, 10)}${pad(rejected, 10)}${pad(s.failureCount, 9)}${pad((s.ms / 1000).toFixed(1), 8)}${pad(Math.round((s.iterations * 1000) / Math.max(1, s.ms)), 10)}`,
    );
  }
  const total = all.reduce((n, s) => n + s.iterations, 0);
  const failures = all.reduce((n, s) => n + s.failureCount, 0);
  console.log(`total: ${total.toLocaleString('en-US')} inputs, ${failures} failures, ${(wallMs / 1000).toFixed(1)} s`);
}

/** Runs the work items in a worker; restarts it after a hang or a blown heap, past the iteration that caused it. */
async function runAll(opts: Options, items: WorkItem[], onFailure: (f: Failure) => void): Promise<TargetStats[]> {
  const results: TargetStats[] = [];
  let queue = items;
  while (queue.length > 0) {
    const progress = new SharedArrayBuffer(12);
    const cells = new Int32Array(progress);
    const input: WorkerInput = { seed: opts.seed, items: queue, progress };
    const worker = new Worker(join(here, 'worker.js'), {
      workerData: input,
      resourceLimits: { maxOldGenerationSizeMb: 1536 },
    });
    const partial = new Map<number, TargetStats>();
    const outcome = await new Promise<{ kind: 'done' } | { kind: 'hang' | 'out-of-memory'; message: string }>(
      (done) => {
        let lastBeat = -1;
        let lastChange = Date.now();
        const timer = setInterval(() => {
          const beat = Atomics.load(cells, 2);
          if (beat !== lastBeat) {
            lastBeat = beat;
            lastChange = Date.now();
          } else if (Date.now() - lastChange > HANG_MS) {
            clearInterval(timer);
            void worker.terminate();
            done({ kind: 'hang', message: `no progress for ${HANG_MS / 1000} s` });
          }
        }, 1000);
        worker.on('message', (m: WorkerMessage) => {
          if (m.type === 'failure') onFailure(m.failure);
          else {
            partial.set(m.item, m.stats);
            const s = m.stats;
            console.log(
              `${s.decoder}: ${s.iterations.toLocaleString('en-US')} inputs in ${(s.ms / 1000).toFixed(1)} s, ${s.failureCount} failures`,
            );
          }
        });
        worker.on('error', (err: Error & { code?: string }) => {
          clearInterval(timer);
          done({
            kind: err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'out-of-memory' : 'hang',
            message: `${err.name}: ${err.message}`,
          });
        });
        worker.on('exit', () => {
          clearInterval(timer);
          done({ kind: 'done' });
        });
      },
    );
    for (const [, s] of [...partial].sort((a, b) => a[0] - b[0])) results.push(s);
    if (outcome.kind === 'done') {
      if (partial.size < queue.length) throw new Error('the fuzz worker stopped early');
      break;
    }
    // The item in progress broke the worker: report its iteration and go on after it.
    const k = Atomics.load(cells, 0);
    const i = Atomics.load(cells, 1);
    const item = queue[k] as WorkItem;
    const target = TARGETS.find((t) => t.name === item.decoder) as AnyTarget;
    const it = makeInput(target, new Pool(target, opts.seed), opts.seed, i);
    onFailure({
      decoder: item.decoder,
      seed: opts.seed,
      iteration: i,
      kind: outcome.kind,
      message: outcome.message,
      stack: '',
      input: it.input,
    });
    const done = i - item.start + 1;
    queue = [
      ...(done < item.iterations ? [{ decoder: item.decoder, start: i + 1, iterations: item.iterations - done }] : []),
      ...queue.slice(k + 1),
    ];
    // Figures for the broken item restart from its next iteration; its earlier figures are lost with the worker.
  }
  return results;
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const targets = selectTargets(opts.decoder);
  if (opts.list) {
    for (const t of TARGETS) console.log(t.name);
    return 0;
  }
  if (targets.length === 0) throw new Error(`no decoder matches ${opts.decoder} (see --list)`);
  if (opts.iteration !== undefined) return replay(opts, targets);
  const counts = split(targets, opts.iterations);
  const items = targets.map((t, k) => ({ decoder: t.name, start: 0, iterations: counts[k] as number }));
  console.log(
    `fuzzing ${targets.length} decoders, ${opts.iterations.toLocaleString('en-US')} inputs, seed ${opts.seed} (node ${process.version})`,
  );
  const t0 = Date.now();
  let failures = 0;
  const stats = await runAll(opts, items, (f) => {
    failures++;
    report(f, opts.corpus);
  });
  const wallMs = Date.now() - t0;
  summary(stats, wallMs);
  if (opts.json) {
    writeFileSync(
      opts.json,
      `${JSON.stringify({ seed: opts.seed, iterations: opts.iterations, wallMs, node: process.version, failures, decoders: stats }, null, 2)}\n`,
    );
  }
  return failures > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 2;
  },
);
