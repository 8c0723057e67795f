import { describe, expect, it } from 'vitest';
import { defaultTestdataDir, runCase, testdataCases } from './testdata.js';

// The shared histories with published verdicts live beside the repository
// (../shared/testdata/linearizability, or $PARLEY_TESTDATA_DIR); the whole set is
// checked (a few seconds). In CI a missing folder fails the run: a checker suite
// that silently skipped would pass without checking anything.
const dir = defaultTestdataDir();
const cases = testdataCases(dir);
const inCi =
  process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false' && process.env.CI !== '0';

if (cases.length === 0 && !inCi) {
  console.warn(
    `\n*** linearizability testdata SKIPPED: no histories under ${dir} (set PARLEY_TESTDATA_DIR; CI=true fails instead) ***\n`,
  );
}

describe.runIf(cases.length === 0 && inCi)('linearizability testdata in CI', () => {
  it('is present', () => {
    expect.fail(`CI=true and no testdata under ${dir}: set PARLEY_TESTDATA_DIR or provide ../shared/testdata`);
  });
});

describe.skipIf(cases.length === 0)(`linearizability testdata (${dir})`, () => {
  it('covers every group the README lists', () => {
    const groups = new Set(cases.map((c) => c.group));
    expect([...groups].sort()).toEqual(['knossos-cas-register', 'porcupine-etcd', 'porcupine-kv']);
    expect(cases.filter((c) => c.expected === 'not linearizable').length).toBeGreaterThan(0);
    expect(cases.length).toBeGreaterThanOrEqual(119); // the 119 published verdicts, at least
  });

  for (const c of cases) {
    it(`${c.name} is ${c.expected}`, () => {
      expect(runCase(c, 60_000).verdict).toBe(c.expected);
    });
  }
});
