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
 *          --no-lean (Parley's processes carry requests and Raft on libp2p streams, not the lean channel)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ETCD_MISSING, findEtcd } from '@parley/etcd';
import { eventualSide, localSide, propagation } from './eventual-side.js';
import { parseOptions } from './options.js';
import { Progress } from './progress.js';
import { type CompareRow, formatCompareTable, markdownTable } from './rows.js';
import type { CompareRun } from './run.js';
import { StrongSide } from './strong-side.js';

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
let strong: StrongSide | undefined;
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await strong?.close();
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
  (has('eventual') ? opts.reps + 4 : has('propagation') ? 3 : 0) +
  (has('local') && !has('eventual') ? opts.reps : 0);
const progress = new Progress(Math.max(1, steps));
const run: CompareRun = { opts, root, repoRoot, rows, extra, progress, writeSvg };

/** Writes an SVG chart into the output directory. */
function writeSvg(name: string, svg: string): void {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, name), `${svg}\n`);
}

let failed = false;
const t0 = Date.now();
try {
  if (strongWork.length > 0) {
    strong = new StrongSide(run, etcdBin as string, strongWork);
    await strong.run();
    await strong.close();
  }
  if (has('eventual')) await eventualSide(run);
  else {
    if (has('local')) await localSide(run);
    if (has('propagation')) await propagation(run, false);
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
