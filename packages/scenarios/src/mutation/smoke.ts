/**
 * The mutation smoke test: every planted bug of ./plants.ts, each in its own
 * scratch copy of the compiled packages, must make its scenario fail within
 * its seed budget.
 *
 * Why compiled JavaScript in a scratch copy: the engine packages are pure
 * TypeScript compiled by `tsc -b` into dist/. Copying the dist/ folders of
 * interface, crdt, raft, coord and sim (a few MB) into a temporary
 * directory, with a node_modules/@parley/* that points at the copies,
 * gives a tree in which one textual patch plants the bug without touching
 * the working tree, without a TypeScript compile per plant, and with a fresh
 * module cache (each plant runs in a child process). The whole smoke takes
 * seconds. It needs a current build (`npm run build`; `npm test` builds first).
 *
 *     npm run build && node packages/scenarios/dist/mutation/smoke.js [--json FILE]
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PlantOutcome } from './plant-worker.js';
import { PLANTS, type Plant } from './plants.js';

/** The packages a scenario run loads. */
const PACKAGES = ['interface', 'crdt', 'raft', 'coord', 'check', 'sim', 'scenarios'] as const;
/**
 * … and those a node-* or coord-* scenario loads too (the real node's strong module or its
 * strong group member, and what they import).
 */
const NODE_PACKAGES = ['node', 'net', 'storage'] as const;

/** packages/ of the repository this file was compiled in (packages/scenarios/dist/mutation/smoke.js). */
export function packagesDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
}

export interface PlantResult extends PlantOutcome {
  plant: Plant;
  elapsedMs: number;
}

/** What a run loads from dist/: modules and JSON, not declarations, source maps or compiled tests. */
function isRuntimeFile(path: string): boolean {
  return !/(\.d\.ts|\.map|\.test\.js|\.tsbuildinfo)$/.test(path);
}

/** Copies the compiled packages (what a run loads) to a fresh directory and applies `plant` there. */
export function scratchCopy(plant: Plant, from: string = packagesDir()): string {
  const root = mkdtempSync(join(tmpdir(), `parley-plant-${plant.name}-`));
  try {
    mkdirSync(join(root, 'node_modules', '@parley'), { recursive: true });
    const node = plant.module.startsWith('node-') || plant.module.startsWith('coord/');
    for (const p of node ? [...PACKAGES, ...NODE_PACKAGES] : PACKAGES) {
      const dst = join(root, 'packages', p);
      cpSync(join(from, p, 'dist'), join(dst, 'dist'), { recursive: true, filter: isRuntimeFile });
      cpSync(join(from, p, 'package.json'), join(dst, 'package.json'));
      symlinkSync(dst, join(root, 'node_modules', '@parley', p), 'dir');
    }
    // Third-party dependencies (parley-check's commander, the node's libp2p, …) come from the
    // repository's node_modules.
    const modules = join(from, '..', 'node_modules');
    for (const name of readdirSync(modules)) {
      if (name === '@parley' || name.startsWith('.')) continue;
      symlinkSync(join(modules, name), join(root, 'node_modules', name), 'dir');
    }
    const dist = join(root, 'packages', plant.pkg, 'dist');
    const hits: { file: string; text: string; at: number }[] = [];
    for (const name of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
      if (!name.endsWith('.js') || name.endsWith('.test.js')) continue;
      const text = readFileSync(join(dist, name), 'utf8');
      for (let at = text.indexOf(plant.find); at >= 0; at = text.indexOf(plant.find, at + 1)) {
        hits.push({ file: join(dist, name), text, at });
      }
    }
    if (hits.length !== 1) {
      throw new Error(
        `plant ${plant.name}: its text occurs ${hits.length === 0 ? 'nowhere' : `${hits.length} times`} in ${plant.pkg}/dist; update 'find' in packages/scenarios/src/mutation/plants.ts`,
      );
    }
    const { file, text, at } = hits[0] as (typeof hits)[number];
    writeFileSync(file, text.slice(0, at) + plant.replace + text.slice(at + plant.find.length));
    return root;
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
}

/** Plants `plant` in a scratch copy and runs its scenario there until it fails or the budget is spent. */
export async function runPlant(plant: Plant, from?: string): Promise<PlantResult> {
  const started = performance.now();
  const root = scratchCopy(plant, from);
  try {
    const worker = join(root, 'packages', 'scenarios', 'dist', 'mutation', 'plant-worker.js');
    const stdout = await new Promise<string>((res, rej) => {
      execFile(
        process.execPath,
        [worker, plant.module, plant.scenario, String(plant.firstSeed), String(plant.budget)],
        { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
        (err, out, errOut) => (err ? rej(new Error(`${plant.name}: ${err.message}\n${errOut}`)) : res(out)),
      );
    });
    const outcome = JSON.parse(stdout.trim().split('\n').pop() as string) as PlantOutcome;
    return { ...outcome, plant, elapsedMs: performance.now() - started };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** One markdown row per plant: name, gap, seeds until caught (of the budget), checker. */
export function tableRow(r: PlantResult): string {
  const seeds = r.caught ? `${r.seedsRun} of ${r.plant.budget}` : `not caught in ${r.plant.budget}`;
  return `| \`${r.plant.name}\` | ${r.plant.gap} | ${r.plant.bug} | \`${r.plant.scenario}\` | ${seeds} | ${r.checker ? `\`${r.checker}\`` : '—'} |`;
}

async function main(argv: readonly string[]): Promise<number> {
  const jsonAt = argv.indexOf('--json');
  const results: PlantResult[] = [];
  for (const plant of PLANTS) {
    const r = await runPlant(plant);
    results.push(r);
    process.stdout.write(
      `${plant.name}: ${r.caught ? `caught at seed ${r.seed} (${r.seedsRun} seeds) by ${r.checker}` : `NOT caught in ${plant.budget} seeds`} [${(r.elapsedMs / 1000).toFixed(1)} s]\n`,
    );
  }
  process.stdout.write('\n| planted bug | gap | what it does | scenario | seeds until caught | checker that fired |\n');
  process.stdout.write('| --- | --- | --- | --- | --- | --- |\n');
  for (const r of results) process.stdout.write(`${tableRow(r)}\n`);
  if (jsonAt >= 0 && argv[jsonAt + 1]) {
    writeFileSync(argv[jsonAt + 1] as string, `${JSON.stringify(results, null, 2)}\n`);
  }
  return results.every((r) => r.caught) ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
