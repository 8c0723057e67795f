import { describe, expect, it } from 'vitest';
import { HistoryRecorder, toKnossosEdn, toPorcupineLog } from '../check/history.js';
import { EXIT_LINEARIZABLE, EXIT_NOT_LINEARIZABLE, EXIT_UNKNOWN, runCheckCli } from './check.js';

function io(files: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: (t: string) => void out.push(t),
      stderr: (t: string) => void err.push(t),
      readFile: async (p: string) => {
        const text = files[p];
        if (text === undefined) throw new Error(`ENOENT: ${p}`);
        return text;
      },
    },
  };
}

const good = (() => {
  const r = new HistoryRecorder();
  r.invoke(0, 'write', 1);
  r.ok(0, 1);
  r.invoke(1, 'read', null);
  r.ok(1, 1);
  return r.events();
})();
const bad = (() => {
  const r = new HistoryRecorder();
  r.invoke(0, 'write', 1);
  r.ok(0, 1);
  r.invoke(1, 'read', null);
  r.ok(1, 2);
  return r.events();
})();
// Wide enough that a 1-step budget cannot finish it.
const wide = (() => {
  const r = new HistoryRecorder();
  for (let p = 0; p < 14; p++) r.invoke(p, 'write', p);
  for (let p = 0; p < 14; p++) r.info(p);
  for (let p = 100; p < 140; p++) {
    r.invoke(p, 'read', null);
    r.ok(p, (p * 7) % 14);
  }
  return r.events();
})();

const files = {
  'good.edn': toKnossosEdn(good),
  'good.log': toPorcupineLog(good, 'jepsen'),
  'bad.txt': toPorcupineLog(bad),
  'wide.edn': toKnossosEdn(wide),
  'broken.edn': '[{:process 1, :type',
};

describe('parley-check', () => {
  it('prints one line per file and exits 0 when all are linearizable', async () => {
    const t = io(files);
    expect(await runCheckCli(['--model', 'register', 'good.edn', 'good.log'], t.io)).toBe(EXIT_LINEARIZABLE);
    expect(t.out).toHaveLength(2);
    expect(t.out[0]).toMatch(/^good\.edn: linearizable \(/);
    expect(t.out[1]).toMatch(/^good\.log: linearizable \(/);
  });

  it('exits 1 when any file is not linearizable, naming the call that cannot be placed', async () => {
    const t = io(files);
    expect(await runCheckCli(['-m', 'register', 'good.edn', 'bad.txt'], t.io)).toBe(EXIT_NOT_LINEARIZABLE);
    expect(t.out[1]).toMatch(/^bad\.txt: not linearizable .*cannot linearize process 1 read/);
  });

  it('exits 2 on a read error, a parse error or a timeout', async () => {
    for (const file of ['missing.edn', 'broken.edn']) {
      const t = io(files);
      expect(await runCheckCli(['-m', 'register', 'good.edn', file], t.io)).toBe(EXIT_UNKNOWN);
      expect(t.out[1]).toMatch(new RegExp(`^${file.replace('.', '\\.')}: error: `));
    }
    const t = io(files);
    expect(await runCheckCli(['-m', 'cas-register', '--timeout-ms', '1', 'wide.edn'], t.io)).toBe(EXIT_UNKNOWN);
    expect(t.out[0]).toMatch(/^wide\.edn: unknown .*timeout/);
  });

  it('prints a JSON report with --json', async () => {
    const t = io(files);
    expect(await runCheckCli(['-m', 'register', '--json', 'good.edn', 'bad.txt'], t.io)).toBe(EXIT_NOT_LINEARIZABLE);
    const report = JSON.parse(t.out.join(''));
    expect(report.model).toBe('register');
    expect(report.exitCode).toBe(1);
    expect(report.files.map((f: { verdict: string }) => f.verdict)).toEqual(['linearizable', 'not linearizable']);
    expect(report.files[1].counterexample.linearized).toBe(1);
  });

  it('refuses an unknown model or missing arguments with exit 2', async () => {
    let t = io(files);
    expect(await runCheckCli(['-m', 'nope', 'good.edn'], t.io)).toBe(EXIT_UNKNOWN);
    expect(t.err.join('')).toMatch(/Allowed choices/);
    t = io(files);
    expect(await runCheckCli(['good.edn'], t.io)).toBe(EXIT_UNKNOWN);
    t = io(files);
    expect(await runCheckCli(['-m', 'kv'], t.io)).toBe(EXIT_UNKNOWN);
    t = io(files);
    expect(await runCheckCli(['-m', 'kv', '--timeout-ms', 'soon', 'good.edn'], t.io)).toBe(EXIT_UNKNOWN);
  });

  it('lists the models in --help', async () => {
    const t = io(files);
    expect(await runCheckCli(['--help'], t.io)).toBe(0);
    expect(t.out.join('')).toMatch(/parley-lease/);
  });
});
