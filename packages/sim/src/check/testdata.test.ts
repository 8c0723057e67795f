import { describe, expect, it } from 'vitest';
import { defaultTestdataDir, runCase, testdataCases } from './sweep.js';

// The shared histories with published verdicts live beside the repository
// (../shared/testdata/linearizability); the whole set is checked (a few seconds).
const cases = testdataCases();

describe.skipIf(cases.length === 0)(`linearizability testdata (${defaultTestdataDir()})`, () => {
  it('covers every group the README lists', () => {
    const groups = new Set(cases.map((c) => c.group));
    expect([...groups].sort()).toEqual(['knossos-cas-register', 'porcupine-etcd', 'porcupine-kv']);
    expect(cases.filter((c) => c.expected === 'not linearizable').length).toBeGreaterThan(0);
  });

  for (const c of cases) {
    it(`${c.name} is ${c.expected}`, () => {
      expect(runCase(c, 60_000).verdict).toBe(c.expected);
    });
  }
});
