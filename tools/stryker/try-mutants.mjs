// `node tools/stryker/try-mutants.mjs <crdt|raft|coord> <file[:line[:column]]> <test file>...`:
// applies, one at a time, each surviving or uncovered mutant of the package's
// last report (dist/mutation/<pkg>.json) that lies at the given place, runs the
// given vitest files against it, restores the source and prints whether the
// tests now kill it. This is how a new test is checked against the mutants it
// was written for. STRYKER_REPORT=<file> reads another report. It edits the source file in place (restored
// after each mutant): never run it while another process builds or tests the same working tree. The loop is
// synchronous, so a signal cannot stop it cleanly: to stop it, kill it and `git checkout` the source file.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PACKAGES } from './shared.mjs';

const [pkg, where, ...tests] = process.argv.slice(2);
if (!PACKAGES.includes(pkg) || !where || tests.length === 0) {
  console.error(
    `usage: node tools/stryker/try-mutants.mjs <${PACKAGES.join('|')}> <file[:line[:column]]> <test file>...`,
  );
  process.exit(2);
}
const root = new URL('../../', import.meta.url);
// STRYKER_REPORT names another report file (e.g. a copy kept from an earlier run).
const reportFile = process.env.STRYKER_REPORT ?? new URL(`dist/mutation/${pkg}.json`, root);
const report = JSON.parse(readFileSync(reportFile, 'utf8'));
const [file, line, column] = where.split(':');
const entry = report.files[file];
if (!entry) {
  console.error(`${file} is not in dist/mutation/${pkg}.json`);
  process.exit(2);
}
const path = new URL(file, root);
const original = readFileSync(path, 'utf8');
if (original !== entry.source) {
  console.error(`${file} changed since the report was made; re-run Stryker first`);
  process.exit(2);
}
const restore = () => writeFileSync(path, original);
const vitest = fileURLToPath(new URL('node_modules/vitest/vitest.mjs', root));

/** Offset in `text` of a 1-based line and column. */
function offsetOf(text, pos) {
  let off = 0;
  for (let l = 1; l < pos.line; l++) off = text.indexOf('\n', off) + 1;
  return off + pos.column - 1;
}

// STRYKER_STATUS=Timeout,... picks other statuses (e.g. to check that a timed-out mutant is really caught).
const statuses = (process.env.STRYKER_STATUS ?? 'Survived,NoCoverage').split(',');
const chosen = entry.mutants.filter(
  (m) =>
    statuses.includes(m.status) &&
    (!line || m.location.start.line === Number(line)) &&
    (!column || m.location.start.column === Number(column)),
);
let alive = 0;
try {
  for (const m of chosen) {
    const a = offsetOf(original, m.location.start);
    const b = offsetOf(original, m.location.end);
    writeFileSync(path, original.slice(0, a) + m.replacement + original.slice(b));
    // A mutant that loops forever blocks vitest: after two minutes it counts as detected ("hangs").
    // vitest itself is the child (no npx or shell between), so the timeout's SIGKILL reaches it.
    const r = spawnSync(process.execPath, [vitest, 'run', ...tests], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
      killSignal: 'SIGKILL',
    });
    const hung = r.error !== undefined;
    const killed = hung || r.status !== 0;
    if (!killed) alive++;
    const { line: l, column: c } = m.location.start;
    const text = m.replacement.replace(/\s+/g, ' ').slice(0, 80);
    console.log(
      `${hung ? 'hangs   ' : killed ? 'killed  ' : 'SURVIVES'} ${file}:${l}:${c} ${m.mutatorName} -> ${text}`,
    );
  }
} finally {
  restore();
}
console.log(`${chosen.length} mutant(s) tried, ${alive} still alive`);
process.exit(alive > 0 ? 1 : 0);
