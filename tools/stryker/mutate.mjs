// `npm run mutate -- <crdt|raft|coord> [stryker options]`: runs Stryker on one
// engine package at the lowest CPU priority. Extra options go to `stryker run`,
// e.g. `--mutate packages/raft/src/log.ts` to narrow a run, or `--force` to
// ignore the incremental file and test every mutant again.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGES } from './shared.mjs';

const [pkg, ...rest] = process.argv.slice(2);
if (!PACKAGES.includes(pkg)) {
  console.error(`usage: npm run mutate -- <${PACKAGES.join('|')}> [stryker run options]`);
  process.exit(2);
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const core = dirname(createRequire(import.meta.url).resolve('@stryker-mutator/core/package.json'));
const stryker = join(core, 'bin', 'stryker.js');
const child = spawn(
  'nice',
  ['-n', '19', process.execPath, stryker, 'run', `tools/stryker/${pkg}.config.mjs`, ...rest],
  { cwd: root, stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
