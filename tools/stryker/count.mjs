// `node tools/stryker/count.mjs <file[:from-to]>...`: counts the mutants Stryker
// would make in each file (or line range) without running any test, to plan
// the `--mutate` of a run before starting it (a run tests a few tens of
// mutants a minute on the 2-core machine).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Instrumenter } from '@stryker-mutator/instrumenter';

const specs = process.argv.slice(2);
if (specs.length === 0) {
  console.error('usage: node tools/stryker/count.mjs <file[:from-to]>...');
  process.exit(2);
}
const quiet = { isDebugEnabled: () => false, debug() {}, info() {}, warn() {}, error() {}, trace() {}, fatal() {} };
const options = { plugins: null, excludedMutations: [], ignorers: [] };
let total = 0;
for (const spec of specs) {
  const [file, range] = spec.split(':');
  const name = resolve(file);
  let mutate = true;
  if (range) {
    const [from, to] = range.split('-').map(Number);
    // Stryker's ranges are 0-based lines, end column exclusive, like `--mutate file:from-to` turns them.
    mutate = [
      { start: { line: from - 1, column: 0 }, end: { line: (to ?? from) - 1, column: Number.MAX_SAFE_INTEGER } },
    ];
  }
  const { mutants } = await new Instrumenter(quiet).instrument(
    [{ name, content: readFileSync(name, 'utf8'), mutate }],
    options,
  );
  total += mutants.length;
  console.log(`${String(mutants.length).padStart(5)}  ${spec}`);
}
console.log(`${String(total).padStart(5)}  total`);
