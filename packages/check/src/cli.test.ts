import { describe, expect, it } from 'vitest';
import { EXIT_LINEARIZABLE, EXIT_NOT_LINEARIZABLE, EXIT_UNKNOWN, runCheckCli } from './cli.js';
import { HistoryRecorder, toKnossosEdn, toPorcupineLog } from './history.js';

function io(files: Record<string, string | Uint8Array>) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: (t: string) => void out.push(t),
      stderr: (t: string) => void err.push(t),
      readFile: async (p: string) => {
        const text: string | Uint8Array | undefined = files[p];
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

  it("reads Jepsen mutex histories whose ops carry no :value (it is optional in Jepsen's histories)", async () => {
    // As Jepsen's lock workloads write them: :acquire / :release with :time and :index, no :value.
    const op = (i: number, p: number, type: string, f: string) =>
      `{:index ${i}, :time ${1_000_000 * (i + 1)}, :type :${type}, :process ${p}, :f :${f}}`;
    const ok = [
      op(0, 0, 'invoke', 'acquire'),
      op(1, 1, 'invoke', 'acquire'),
      op(2, 0, 'ok', 'acquire'),
      op(3, 0, 'invoke', 'release'),
      op(4, 0, 'ok', 'release'),
      op(5, 1, 'ok', 'acquire'),
      '{:index 6, :time 7000000, :type :info, :process :nemesis, :f :start}',
    ];
    // Both acquires answered ok with no release between them: not linearizable.
    const twice = [op(0, 0, 'invoke', 'acquire'), op(1, 0, 'ok', 'acquire')];
    twice.push(op(2, 1, 'invoke', 'acquire'), op(3, 1, 'ok', 'acquire'));
    const t = io({ 'mutex.edn': `[${ok.join('\n ')}]`, 'twice.edn': twice.join('\n') });
    expect(await runCheckCli(['-m', 'mutex', 'mutex.edn'], t.io)).toBe(EXIT_LINEARIZABLE);
    expect(t.out[0]).toMatch(/^mutex\.edn: linearizable \(/);
    expect(await runCheckCli(['-m', 'mutex', 'twice.edn'], t.io)).toBe(EXIT_NOT_LINEARIZABLE);
    expect(t.out[1]).toMatch(/^twice\.edn: not linearizable .*acquire/);
  });

  it('lists the models in --help', async () => {
    const t = io(files);
    expect(await runCheckCli(['--help'], t.io)).toBe(0);
    expect(t.out.join('')).toMatch(/parley-lease/);
  });
});

const utf8 = (t: string) => new TextEncoder().encode(t);
const W = (p: number, type: string, f: string, v: string) => `{:process ${p}, :type :${type}, :f :${f}, :value ${v}}`;

/**
 * Hostile input: each row is in the table of docs/checkers.md ("Input parley-check
 * refuses"), with the exit code and a word of the message.
 */
const HOSTILE: readonly { name: string; content: string | Uint8Array; args?: string[]; exit: number; says: RegExp }[] =
  [
    { name: 'empty file', content: '', exit: 2, says: /empty/ },
    { name: 'white space only', content: ' \n\t\n', exit: 2, says: /empty/ },
    { name: 'comment only', content: '; nothing\n', exit: 2, says: /empty/ },
    { name: 'an empty vector', content: '[]', exit: 2, says: /no client operations/ },
    { name: 'an empty list', content: '( )', exit: 2, says: /no client operations/ },
    {
      name: 'JSON text',
      content: '[{"process": 1, "type": "invoke", "f": "write", "value": 1}]',
      exit: 2,
      says: /keyword|JSON/,
    },
    { name: 'JSON with string keys', content: '[{"process" 1 "type" :invoke}]', exit: 2, says: /JSON/ },
    { name: 'maps without :process', content: '[{:type :invoke, :f :write, :value 1}]', exit: 2, says: /no :process/ },
    {
      name: 'a misspelled :process',
      content: `[${W(0, 'invoke', 'write', '1')} {:proccess 0, :type :ok, :f :write, :value 1}]`,
      exit: 2,
      says: /:proccess but no :process \(misspelled/,
    },
    {
      name: 'a misspelled :value',
      content: `[${W(0, 'invoke', 'read', 'nil')} {:process 0, :type :ok, :f :read, :valeu 5}]`,
      exit: 2,
      says: /:valeu but no :value/,
    },
    {
      name: 'a misspelled :key',
      content: `[{:process 0, :type :invoke, :f :write, :kye "x", :value 1}]`,
      exit: 2,
      says: /:kye but no :key/,
    },
    { name: 'an unknown :type', content: `[${W(0, 'invok', 'write', '1')}]`, exit: 2, says: /:type must be/ },
    {
      name: 'only nemesis entries',
      content: '[{:process :nemesis, :type :info, :f :start, :value nil}]',
      exit: 2,
      says: /no client/,
    },
    {
      name: 'a key given twice',
      content: '[{:process 0, :process 1, :type :invoke, :f :read, :value nil}]',
      exit: 2,
      says: /twice/,
    },
    { name: 'a vector among maps', content: `${W(0, 'invoke', 'read', 'nil')}\n[1 2]`, exit: 2, says: /one vector/ },
    {
      name: 'a completion without a call',
      content: `[${W(0, 'ok', 'read', '1')}]`,
      exit: 2,
      says: /without an invoke/,
    },
    { name: 'unbalanced EDN', content: '[{:process 1, :type', exit: 2, says: /missing/ },
    { name: 'nesting 10,000 deep', content: `[${'['.repeat(10_000)}`, exit: 2, says: /deeper/ },
    {
      name: 'a Jepsen log line that does not parse',
      content: 'INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t[1 2\n',
      exit: 2,
      says: /line 2: unreadable value/,
    },
    {
      name: 'a Jepsen log line with an unknown type',
      content: 'INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:okay\t:read\t1\n',
      exit: 2,
      says: /line 2: not a history event/,
    },
    {
      name: 'a Jepsen log line with a garbled process',
      content: 'INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - x0\t:ok\t:read\t1\n',
      exit: 2,
      says: /line 2: not a history event/,
    },
    { name: 'a log without events', content: 'INFO  jepsen.core - nothing happened\n', exit: 2, says: /not a history/ },
    {
      name: 'non-UTF-8 bytes',
      content: new Uint8Array([...utf8(`[${W(0, 'invoke', 'write', '"a')}`), 0xff, ...utf8('"}]')]),
      exit: 2,
      says: /UTF-8/,
    },
    {
      name: 'EDN read as a Jepsen log (--format jepsen-log)',
      content: `[${W(0, 'invoke', 'read', 'nil')}]`,
      args: ['--format', 'jepsen-log'],
      exit: 2,
      says: /no client operations/,
    },
    {
      name: '--independent without [key value] tuples',
      content: `[${W(0, 'invoke', 'write', '1')} ${W(0, 'ok', 'write', '1')}]`,
      args: ['--independent'],
      exit: 2,
      says: /needs values \[key value\]/,
    },
  ];

describe('parley-check refuses hostile input (docs/checkers.md table)', () => {
  for (const row of HOSTILE) {
    it(`${row.name}: exit ${row.exit}`, async () => {
      const t = io({ 'in.edn': row.content });
      const code = await runCheckCli(['-m', 'cas-register', ...(row.args ?? []), 'in.edn'], t.io);
      expect(t.out.join('')).toMatch(/^in\.edn: error: /);
      expect(t.out.join('')).toMatch(row.says);
      expect(code).toBe(row.exit);
    });
  }

  it('chooses the format by structure: a log line inside an :error string is not a log', async () => {
    const logLine = 'INFO  jepsen.util - 3\t:ok\t:read\t4';
    const text = `[${W(0, 'invoke', 'write', '1')}\n {:process 0, :type :ok, :f :write, :value 1, :error "${logLine}"}\n ${W(1, 'invoke', 'read', 'nil')}\n ${W(1, 'ok', 'read', '2')}]`;
    const t = io({ 'in.edn': text });
    expect(await runCheckCli(['-m', 'cas-register', '--json', 'in.edn'], t.io)).toBe(EXIT_NOT_LINEARIZABLE);
    const report = JSON.parse(t.out.join(''));
    expect(report.files[0]).toMatchObject({ format: 'knossos-edn', operations: 2 });
  });

  it('decodes strictly but accepts a UTF-8 byte order mark', async () => {
    const text = `[${W(0, 'invoke', 'write', '"é"')} ${W(0, 'ok', 'write', '"é"')} ${W(1, 'invoke', 'read', 'nil')} ${W(1, 'ok', 'read', '"é"')}]`;
    const t = io({ 'bom.edn': new Uint8Array([0xef, 0xbb, 0xbf, ...utf8(text)]) });
    expect(await runCheckCli(['-m', 'cas-register', 'bom.edn'], t.io)).toBe(EXIT_LINEARIZABLE);
  });

  it("reads Jepsen's #jepsen.history.Op records and ##Inf / ##NaN as Clojure does", async () => {
    const op = (i: number, p: number, type: string, f: string, v: string) =>
      `#jepsen.history.Op{:index ${i}, :time ${i}, :type :${type}, :process ${p}, :f :${f}, :value ${v}}`;
    const inf = [
      op(0, 0, 'invoke', 'write', '##Inf'),
      op(1, 0, 'ok', 'write', '##Inf'),
      op(2, 1, 'invoke', 'read', 'nil'),
      op(3, 1, 'ok', 'read', '##Inf'),
    ];
    let t = io({ 'h.edn': inf.join('\n') });
    expect(await runCheckCli(['-m', 'cas-register', 'h.edn'], t.io)).toBe(EXIT_LINEARIZABLE);
    // (= ##NaN ##NaN) is false in Clojure: a read of NaN never matches.
    const nan = inf.map((l) => l.replaceAll('##Inf', '##NaN'));
    t = io({ 'h.edn': nan.join('\n') });
    expect(await runCheckCli(['-m', 'cas-register', 'h.edn'], t.io)).toBe(EXIT_NOT_LINEARIZABLE);
  });

  it('checks independent keys one at a time with --independent', async () => {
    const text = [
      W(0, 'invoke', 'write', '[1 5]'),
      W(0, 'ok', 'write', '[1 5]'),
      W(1, 'invoke', 'read', '[2 nil]'),
      W(1, 'ok', 'read', '[2 0]'),
      W(1, 'invoke', 'read', '[1 nil]'),
      W(1, 'ok', 'read', '[1 5]'),
    ].join('\n');
    let t = io({ 'i.edn': text });
    expect(await runCheckCli(['-m', 'cas-register', '--independent', '--json', 'i.edn'], t.io)).toBe(EXIT_LINEARIZABLE);
    expect(JSON.parse(t.out.join('')).files[0].partitions).toBe(2);
    // Without --independent the pairs are values of one register: [2 0] was never written.
    t = io({ 'i.edn': text });
    expect(await runCheckCli(['-m', 'cas-register', 'i.edn'], t.io)).toBe(EXIT_NOT_LINEARIZABLE);
  });

  it('takes the memo cap as an option', async () => {
    const t = io(files);
    expect(await runCheckCli(['-m', 'cas-register', '--max-memo-mb', '0', 'good.edn'], t.io)).toBe(EXIT_UNKNOWN);
    expect(t.err.join('')).toMatch(/max-memo-mb/);
    expect(await runCheckCli(['-m', 'cas-register', '--max-memo-mb', '1', 'good.edn'], t.io)).toBe(EXIT_LINEARIZABLE);
  });
});
