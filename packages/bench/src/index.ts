/**
 * @parley/bench — one table format and one JSON shape for every Parley benchmark.
 *
 * @example
 * ```ts
 * import { Bench, measureOps } from '@parley/bench';
 * const bench = new Bench('crdt');
 * const ours = measureOps(() => map.set(k, v), 100_000);
 * const yjs = measureOps(() => ymap.set(k, v), 100_000);
 * bench.add({ name: 'set', unit: 'ops/s', value: ours, anchor: 'yjs Y.Map', anchorValue: yjs });
 * await bench.finish(); // prints the table; honours `--json FILE`
 * ```
 */
import { writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

export interface BenchResult {
  name: string;
  unit: string;
  value: number;
  /** What the same workload was measured on in the same run, or null when there is none. */
  anchor: string | null;
  anchorValue: number | null;
  /** value / anchorValue, or null without an anchor. */
  ratio: number | null;
}

export interface BenchRow {
  name: string;
  unit: string;
  value: number;
  anchor?: string;
  anchorValue?: number;
}

export function toResult(row: BenchRow): BenchResult {
  const anchorValue = row.anchorValue ?? null;
  return {
    name: row.name,
    unit: row.unit,
    value: row.value,
    anchor: row.anchor ?? null,
    anchorValue,
    ratio: anchorValue === null || anchorValue === 0 ? null : row.value / anchorValue,
  };
}

function fmt(n: number | null): string {
  if (n === null) return '—';
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US');
  if (abs >= 10) return n.toFixed(1);
  return n.toFixed(3);
}

/** Renders results as an aligned plain-text table. */
export function formatTable(title: string, results: readonly BenchResult[]): string {
  const header = ['benchmark', 'unit', 'parley', 'anchor', 'anchor value', 'ratio'];
  const rows = results.map((r) => [
    r.name,
    r.unit,
    fmt(r.value),
    r.anchor ?? '—',
    fmt(r.anchorValue),
    r.ratio === null ? '—' : `${r.ratio.toFixed(2)}×`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i >= 2 && i !== 3 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join('  ');
  return [title, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Parses `--json FILE` (or `--json=FILE`) from argv. */
export function jsonPathFromArgs(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--json') return argv[i + 1];
    if (arg?.startsWith('--json=')) return arg.slice('--json='.length);
  }
  return undefined;
}

export class Bench {
  readonly results: BenchResult[] = [];
  constructor(
    readonly title: string,
    private readonly argv: readonly string[] = process.argv.slice(2),
  ) {}

  add(row: BenchRow): BenchResult {
    const result = toResult(row);
    this.results.push(result);
    process.stderr.write(`  ${result.name}: ${fmt(result.value)} ${result.unit}\n`);
    return result;
  }

  async finish(): Promise<void> {
    process.stdout.write(`${formatTable(this.title, this.results)}\n`);
    const path = jsonPathFromArgs(this.argv);
    if (path) {
      await writeFile(path, `${JSON.stringify(this.results, null, 2)}\n`);
      process.stdout.write(`wrote ${path}\n`);
    }
  }
}

/**
 * Runs `op` `iterations` times after a warm-up of a tenth as many and returns
 * operations per second. `op` receives the iteration number.
 */
export function measureOps(op: (i: number) => void, iterations: number): number {
  const warm = Math.max(1, Math.floor(iterations / 10));
  for (let i = 0; i < warm; i++) op(i);
  const start = performance.now();
  for (let i = 0; i < iterations; i++) op(warm + i);
  const elapsedMs = performance.now() - start;
  return (iterations / elapsedMs) * 1000;
}

export async function measureOpsAsync(op: (i: number) => Promise<void>, iterations: number): Promise<number> {
  const warm = Math.max(1, Math.floor(iterations / 10));
  for (let i = 0; i < warm; i++) await op(i);
  const start = performance.now();
  for (let i = 0; i < iterations; i++) await op(warm + i);
  const elapsedMs = performance.now() - start;
  return (iterations / elapsedMs) * 1000;
}

/** Starts a monotonic stopwatch; calling the result gives the milliseconds elapsed since. */
export function startStopwatch(): () => number {
  const start = performance.now();
  return () => performance.now() - start;
}

/** Wall time of one call in milliseconds. */
export function timeMs(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

export async function timeMsAsync(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** The q-quantile (0..1) of a sample, by nearest rank. */
export function quantile(sample: readonly number[], q: number): number {
  if (sample.length === 0) return Number.NaN;
  const sorted = [...sample].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Heap bytes in use after a full collection when `--expose-gc` is on. */
export function heapUsedBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

/** How long a benchmark measures the idle cost (CPU with nothing to do) of its processes. */
export const IDLE_MS = 10_000;

/**
 * When the propagation benchmarks measure their cluster's idle cost (an `IDLE_MS` window each),
 * as seconds of quiet since the timed writes' last read. The first window still holds the writes'
 * tail (remote commits, compaction); the second (40 s) often holds V8's memory-reducing major
 * collections, which run once 10-80 s after a burst of activity (`--trace-gc`: "Mark-Compact
 * (reduce)", 120-180 ms of CPU); the third (120 s) is a cluster that has been idle for a while.
 */
export const IDLE_WINDOWS = [
  { quietMs: 2_000, label: 'just after the writes' },
  { quietMs: 42_000, label: 'settled (40 s quiet)' },
  { quietMs: 120_000, label: 'idle for long (120 s quiet)' },
] as const;

/** The label of the window the idle target is judged on: an idle cluster is one that has been idle a while. */
export const IDLE_TARGET_WINDOW = IDLE_WINDOWS[IDLE_WINDOWS.length - 1]?.label as string;

/** CPU ms per second per process over `IDLE_MS`, as `cpuOf` (the sum over `processes`) counts it. */
export async function idleCpuMsPerSecond(cpuOf: () => Promise<number>, processes: number): Promise<number> {
  const before = await cpuOf();
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  return ((await cpuOf()) - before) / processes / ((performance.now() - start) / 1000);
}

/**
 * `idleCpuMsPerSecond` in each of `IDLE_WINDOWS`, counted from now (call it right after the
 * timed writes' last read).
 */
export async function idleSeries(
  cpuOf: () => Promise<number>,
  processes: number,
): Promise<{ label: string; msPerSecond: number }[]> {
  const start = performance.now();
  const out: { label: string; msPerSecond: number }[] = [];
  for (const w of IDLE_WINDOWS) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + w.quietMs - performance.now())));
    out.push({ label: w.label, msPerSecond: await idleCpuMsPerSecond(cpuOf, processes) });
  }
  return out;
}

/** Every process of a benchmark runs this much of its workload before anything is timed (JIT, caches, connections). */
export const WARM_UP = { ops: 2_000, ms: 10_000 } as const;

/**
 * Runs `op` WARM_UP.ops times or until WARM_UP.ms have passed, whichever comes
 * first, `intervalMs` apart (0: back to back). For a multi-process benchmark
 * `op` is a write every other process receives, so each of them warms too.
 */
export async function warmUp(op: (i: number) => unknown, intervalMs = 0): Promise<number> {
  const start = performance.now();
  let i = 0;
  for (; i < WARM_UP.ops && performance.now() - start < WARM_UP.ms; i++) {
    await op(i);
    if (intervalMs > 0)
      await new Promise((r) => setTimeout(r, Math.max(0, start + (i + 1) * intervalMs - performance.now())));
  }
  return i;
}
