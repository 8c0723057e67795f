/**
 * The shared linearizability testdata (`../shared/testdata/linearizability/`
 * beside the repo): which model each file is checked with and the verdict its
 * checker's authors published. Run it as a program to time every file:
 *
 *     npx tsc -b packages/check && node packages/check/dist/testdata.js [DIR] [--repeat N] [--json FILE]
 *
 * `--repeat N` checks every file N times and keeps its fastest time (the machine's
 * noise only ever adds time).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { checkLinearizability, type Verdict } from './linearizability.js';
import type { Model } from './model.js';
import { casRegisterModel, kvModel, registerModel } from './models/index.js';
import { parseHistory } from './parse.js';

export type TestdataGroup = 'porcupine-etcd' | 'porcupine-kv' | 'knossos-cas-register';

export interface TestdataCase {
  readonly group: TestdataGroup;
  /** Path relative to the testdata folder. */
  readonly name: string;
  readonly path: string;
  readonly model: Model;
  readonly expected: Verdict;
}

/**
 * The testdata folder: `$PARLEY_TESTDATA_DIR` when set, else the first
 * `shared/testdata/linearizability` beside the repository root or one of its
 * parents (a git worktree sits one level deeper than the clone), else the
 * conventional `../shared/testdata/linearizability` (which may be absent).
 */
export function defaultTestdataDir(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.PARLEY_TESTDATA_DIR;
  if (fromEnv !== undefined && fromEnv !== '') return resolve(fromEnv);
  // This file is packages/check/{src,dist}/testdata.*: three levels below the repository root.
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
  const conventional = resolve(repoRoot, '..', 'shared', 'testdata', 'linearizability');
  let dir = resolve(repoRoot, '..');
  for (let up = 0; up < 3; up++) {
    const candidate = join(dir, 'shared', 'testdata', 'linearizability');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return conventional;
}

/** Published verdicts: the etcd files listed linearizable in the testdata README. */
const LINEARIZABLE_ETCD: ReadonlySet<string> = new Set(
  ['002', '018', '038', '048', '056', '076', '080', '092', '098', '100', '102'].map((n) => `etcd_${n}.log`),
);

function list(dir: string, suffix: string): string[] {
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(suffix))
        .sort()
    : [];
}

/** Every history file of the testdata folder with its model and expected verdict (empty when absent). */
export function testdataCases(dir: string = defaultTestdataDir()): TestdataCase[] {
  const cases: TestdataCase[] = [];
  const add = (group: TestdataGroup, rel: string, model: Model, linearizable: boolean) =>
    cases.push({
      group,
      name: rel,
      path: join(dir, rel),
      model,
      expected: linearizable ? 'linearizable' : 'not linearizable',
    });
  for (const f of list(join(dir, 'porcupine', 'etcd'), '.log')) {
    add('porcupine-etcd', `porcupine/etcd/${f}`, registerModel as unknown as Model, LINEARIZABLE_ETCD.has(f));
  }
  for (const f of list(join(dir, 'porcupine', 'kv'), '.txt')) {
    add('porcupine-kv', `porcupine/kv/${f}`, kvModel as unknown as Model, f.endsWith('-ok.txt'));
  }
  for (const verdict of ['good', 'bad'] as const) {
    for (const f of list(join(dir, 'knossos', 'cas-register', verdict), '.edn')) {
      add(
        'knossos-cas-register',
        `knossos/cas-register/${verdict}/${f}`,
        casRegisterModel as unknown as Model,
        verdict === 'good',
      );
    }
  }
  return cases;
}

export interface SweepResult {
  readonly name: string;
  readonly group: TestdataGroup;
  readonly expected: Verdict;
  readonly verdict: Verdict;
  readonly operations: number;
  /** Parse plus check, wall-clock. */
  readonly elapsedMs: number;
}

/** Parses and checks one case; `elapsedMs` covers both. */
export function runCase(c: TestdataCase, timeoutMs?: number): SweepResult {
  const started = performance.now();
  const { events } = parseHistory(readFileSync(c.path, 'utf8'));
  const r = checkLinearizability(c.model, events, timeoutMs === undefined ? {} : { timeoutMs });
  return {
    name: c.name,
    group: c.group,
    expected: c.expected,
    verdict: r.verdict,
    operations: r.operations,
    elapsedMs: performance.now() - started,
  };
}

function main(argv: readonly string[]): number {
  const jsonAt = argv.indexOf('--json');
  const jsonFile = jsonAt >= 0 ? argv[jsonAt + 1] : undefined;
  const repeatAt = argv.indexOf('--repeat');
  const repeat = repeatAt >= 0 ? Number(argv[repeatAt + 1]) : 1;
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 100) {
    process.stderr.write('--repeat takes an integer from 1 to 100\n');
    return 2;
  }
  const positional = argv.filter(
    (a, i) => !a.startsWith('--') && (jsonAt < 0 || i !== jsonAt + 1) && (repeatAt < 0 || i !== repeatAt + 1),
  );
  const dir = positional[0] ?? defaultTestdataDir();
  const cases = testdataCases(dir);
  if (cases.length === 0) {
    process.stderr.write(`no testdata under ${dir}\n`);
    return 2;
  }
  const results = cases.map((c) => {
    let best = runCase(c, 60_000);
    for (let i = 1; i < repeat; i++) {
      const r = runCase(c, 60_000);
      if (r.elapsedMs < best.elapsedMs) best = r;
    }
    return best;
  });
  const groups = new Map<TestdataGroup, SweepResult[]>();
  for (const r of results) {
    let g = groups.get(r.group);
    if (g === undefined) groups.set(r.group, (g = []));
    g.push(r);
  }
  process.stdout.write('group                  files  correct  total ms   max ms  slowest\n');
  for (const [group, rs] of groups) {
    const total = rs.reduce((s, r) => s + r.elapsedMs, 0);
    const slowest = rs.reduce((a, b) => (b.elapsedMs > a.elapsedMs ? b : a));
    const correct = rs.filter((r) => r.verdict === r.expected).length;
    process.stdout.write(
      `${group.padEnd(22)} ${String(rs.length).padStart(5)}  ${String(correct).padStart(7)}  ${total.toFixed(0).padStart(8)} ${slowest.elapsedMs.toFixed(0).padStart(8)}  ${slowest.name}\n`,
    );
  }
  for (const r of results.filter((x) => x.name.startsWith('porcupine/kv/c10'))) {
    process.stdout.write(`${r.name}: ${r.verdict} in ${r.elapsedMs.toFixed(0)} ms\n`);
  }
  const wrong = results.filter((r) => r.verdict !== r.expected);
  for (const r of wrong) process.stdout.write(`WRONG ${r.name}: ${r.verdict}, expected ${r.expected}\n`);
  if (jsonFile !== undefined) writeFileSync(jsonFile, `${JSON.stringify({ dir, results }, null, 2)}\n`);
  return wrong.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
