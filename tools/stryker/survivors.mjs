// `node tools/stryker/survivors.mjs <crdt|raft|coord>`: after `npm run mutate`,
// prints the package's mutant counts and score, then every surviving and
// uncovered mutant as file:line, mutator and the replacement code, from the
// JSON report (dist/mutation/<pkg>.json, the mutation-testing-report schema).
import { readFileSync } from 'node:fs';
import { PACKAGES } from './shared.mjs';

const pkg = process.argv[2];
if (!PACKAGES.includes(pkg)) {
  console.error(`usage: node tools/stryker/survivors.mjs <${PACKAGES.join('|')}>`);
  process.exit(2);
}
const report = JSON.parse(readFileSync(new URL(`../../dist/mutation/${pkg}.json`, import.meta.url), 'utf8'));

const counts = {};
const rows = [];
for (const [file, { source, mutants }] of Object.entries(report.files)) {
  const lines = source.split('\n');
  for (const m of mutants) {
    counts[m.status] = (counts[m.status] ?? 0) + 1;
    if (m.status !== 'Survived' && m.status !== 'NoCoverage') continue;
    const { line, column } = m.location.start;
    const original = lines[line - 1]?.trim() ?? '';
    const replacement = (m.replacement ?? '').replace(/\s+/g, ' ').slice(0, 100);
    rows.push(`${m.status === 'NoCoverage' ? 'uncovered' : 'survived '} ${file}:${line}:${column} ${m.mutatorName}`);
    rows.push(`    ${original.slice(0, 110)}`);
    rows.push(`    -> ${replacement}`);
  }
}
const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
const valid = detected + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
const covered = valid - (counts.NoCoverage ?? 0);
console.log(rows.join('\n'));
console.log(JSON.stringify(counts));
console.log(
  `mutants ${valid}: detected ${detected}, score ${((100 * detected) / valid).toFixed(2)} %, ` +
    `of covered ${((100 * detected) / covered).toFixed(2)} %`,
);
