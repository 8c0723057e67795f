import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ETCD_MISSING, findEtcd } from '@parley/etcd';
import { describe, expect, it } from 'vitest';
import { parseOptions } from './options.js';
import { countSocketWrites, cpuMsOf, parseProcStat } from './proc.js';
import { atLeast, atMost, atMostAnchor, compareRow, formatCompareTable, markdownTable } from './rows.js';
import { formatSpread, spread } from './stats.js';
import { cdfChart, timelineChart } from './svg.js';
import { runStrongTask, type StrongAdapter, warmupOf } from './workloads.js';

/** An adapter that answers at once and counts its calls. */
function countingAdapter(): StrongAdapter & { calls: number } {
  const a = {
    calls: 0,
    async put() {
      a.calls++;
    },
    async version() {
      return '1';
    },
    async cas() {
      a.calls++;
      return { won: a.calls % 2 !== 0, version: String(a.calls) };
    },
    async claim() {
      a.calls++;
      return true;
    },
    async lockCycle() {
      a.calls++;
      await new Promise((r) => setImmediate(r));
      return undefined;
    },
  };
  return a;
}

describe('bench:compare pure parts', () => {
  it('spread gives median, min and max over repetitions', () => {
    expect(spread([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3, n: 3 });
    expect(spread([]).n).toBe(0);
    expect(formatSpread(spread([1, 2.5]), 1)).toBe('1.0–2.5 (n=2)');
  });

  it('rows carry the @parley/bench shape, the ratio and whether the target was met', () => {
    const row = compareRow({
      name: 'CAS',
      unit: 'ops/s',
      better: 'higher',
      value: spread([300, 310, 320]),
      anchor: 'etcd',
      anchorValue: spread([100, 150, 200]),
      target: atLeast(2),
    });
    expect(row).toMatchObject({
      name: 'CAS',
      unit: 'ops/s',
      value: 310,
      anchor: 'etcd',
      anchorValue: 150,
      target: { met: true },
    });
    expect(row.ratio).toBeCloseTo(310 / 150);
    const json = JSON.parse(JSON.stringify(row));
    for (const k of ['name', 'unit', 'value', 'anchor', 'anchorValue', 'ratio']) expect(json).toHaveProperty(k);
    expect(
      compareRow({
        name: 'p50',
        unit: 'ms',
        better: 'lower',
        value: spread([5]),
        anchor: 'etcd',
        anchorValue: spread([4]),
        target: atMostAnchor(),
      }).target?.met,
    ).toBe(false);
    expect(
      compareRow({ name: 'max', unit: 'ms', better: 'lower', value: spread([1400]), target: atMost(1300, 'ms') }).target
        ?.met,
    ).toBe(false);
    const noAnchor = compareRow({ name: 'x', unit: 'ms', better: 'lower', value: spread([1]) });
    expect(noAnchor.ratio).toBeNull();
    expect(formatCompareTable('t', [row])).toContain('≥ 2× etcd: met');
    expect(markdownTable([row, noAnchor]).split('\n')).toHaveLength(4);
  });

  it('draws CDF and timeline charts as well-formed SVG with escaped labels', () => {
    const svg = cdfChart('latency <ms>', [
      { label: 'A & B', color: '#111', values: [1, 2, 3, 4] },
      { label: 'C', color: '#222', values: [2, 4, 6] },
    ]);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('<title>latency &lt;ms&gt;</title>');
    expect(svg).toContain('A &amp; B');
    expect(svg.match(/<polyline/g)).toHaveLength(2);
    expect(svg).not.toContain('NaN');
    const tl = timelineChart(
      'failover',
      [
        {
          label: 'P',
          color: '#111',
          trials: [
            [-100, 50, 1200],
            [-10, 900],
          ],
        },
      ],
      -500,
      3000,
    );
    expect(tl.match(/<rect x="[\d.]+" y="[\d.]+" width="1.2"/g)).toHaveLength(5);
    // Acks closer than a pixel share one mark: 1,000 acks within 100 ms draw at most ~20.
    const dense = timelineChart(
      'd',
      [{ label: 'P', color: '#111', trials: [Array.from({ length: 1000 }, (_, i) => i / 10)] }],
      -500,
      3000,
    );
    const marks = dense.match(/<rect x="[\d.]+" y="[\d.]+" width="1.2"/g)?.length ?? 0;
    expect(marks).toBeGreaterThan(5);
    expect(marks).toBeLessThanOrEqual(20);
    expect(tl).toContain('>-500<');
    expect(tl).toContain('>3000<');
    expect(tl).not.toContain('NaN');
  });

  it('warms each workload with the same loop, bounded by operations or time, whichever comes first', async () => {
    expect(warmupOf({ kind: 'writes', count: 200, prefix: 'w0' }, 2000, 10)).toEqual({
      kind: 'writes',
      count: 2000,
      maxMs: 10_000,
      prefix: 'warm-w0',
    });
    expect(warmupOf({ kind: 'cas', clients: 16, hot: true, durationMs: 3000, prefix: 'c' }, 2000, 10)).toEqual({
      kind: 'cas',
      clients: 16,
      hot: true,
      durationMs: 10_000,
      maxOps: 2000,
      prefix: 'warm-c',
    });
    // The operation bound ends the loop long before 10 s when operations are fast...
    const a = countingAdapter();
    const t0 = performance.now();
    const r = await runStrongTask(a, warmupOf({ kind: 'writes', count: 5, prefix: 'w' }, 300, 10));
    expect(r.kind === 'writes' && r.latencies.length).toBe(300);
    expect(performance.now() - t0).toBeLessThan(5_000);
    for (const kind of ['cas', 'locks', 'claims'] as const) {
      const b = countingAdapter();
      const task =
        kind === 'cas'
          ? { kind, clients: 4, hot: false, durationMs: 1, prefix: 'x' }
          : { kind, clients: 4, durationMs: 1, prefix: 'x' };
      const res = await runStrongTask(b, warmupOf(task, 100, 10));
      expect(res.kind === 'rate' && res.ops + res.retries).toBeGreaterThanOrEqual(100);
      expect(b.calls).toBeLessThan(100 + 4 + 1);
    }
    // ...and the time bound ends it when they are slow.
    const slow: StrongAdapter = { ...countingAdapter(), put: () => new Promise((res) => setTimeout(res, 20)) };
    const s = await runStrongTask(slow, { kind: 'writes', count: 2000, maxMs: 200, prefix: 's' });
    expect(s.kind === 'writes' && s.latencies.length).toBeLessThan(20);
  });

  it('reads CPU time from /proc and counts socket writes in an strace trace', () => {
    expect(parseProcStat('42 (node (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 731 95 0 0 20 0 11 0 5')).toEqual({
      utime: 731,
      stime: 95,
    });
    expect(() => parseProcStat('garbage')).toThrow();
    const before = cpuMsOf([process.pid]);
    const end = performance.now() + 150;
    while (performance.now() < end) Math.sqrt(Math.random());
    expect(cpuMsOf([process.pid]) - before).toBeGreaterThanOrEqual(50);
    const trace = [
      '10868 write(20<TCP:[127.0.0.1:49332->127.0.0.1:45351]>, ""..., 5) = 5',
      '10868 writev(21<TCPv6:[[::ffff:127.0.0.1]:45351->[::ffff:127.0.0.1]:49332]>, [...], 2) = 9',
      '10870 write(7</tmp/x/LOG>, ""..., 80) = 80',
      '10871 write(9<pipe:[123]>, ""..., 1) = 1',
      '10872 sendmsg(4<UNIX:[999->998]>, {...}, 0 <unfinished ...>',
      '10872 <... sendmsg resumed>) = 40',
      '10873 write(12<TCP:[127.0.0.1:2380->127.0.0.1:5000]>, ""..., 5 <unfinished ...>',
      '10873 <... write resumed>) = 5',
    ].join('\n');
    expect(countSocketWrites(trace)).toBe(4);
  });

  it('parses options and rejects bad ones', () => {
    expect(parseOptions([])).toMatchObject({ reps: 3, trials: 20, nodes: 20, warmOps: 2000, warmSeconds: 10 });
    expect(parseOptions(['--warm-ops', '50', '--warm-seconds', '2', '--json', '/tmp/x.json'])).toMatchObject({
      warmOps: 50,
      warmSeconds: 2,
      json: '/tmp/x.json',
    });
    expect(() => parseOptions(['--warm-ops', '0'])).toThrow(/--warm-ops/);
    expect(() => parseOptions(['--json'])).toThrow(/--json/);
    expect(parseOptions(['--nodes', '7']).nodes).toBe(7);
    expect(() => parseOptions(['--nodes', '1'])).toThrow(/--nodes/);
    const o = parseOptions(['--only', 'cas,locks', '--trials', '20', '--reps', '5']);
    expect([...o.only]).toEqual(['cas', 'locks']);
    expect(o.trials).toBe(20);
    expect(() => parseOptions(['--only', 'nope'])).toThrow(/--only/);
    expect([...parseOptions(['--only', 'propagation', '--nodes', '8']).only]).toEqual(['propagation']);
    expect(() => parseOptions(['--reps', '0'])).toThrow(/--reps/);
    expect(() => parseOptions(['--bogus'])).toThrow(/unknown option/);
  });

  it('says how to install etcd and exits non-zero when etcd is missing', () => {
    expect(findEtcd('/nonexistent/etcd')).toBeUndefined();
    expect(ETCD_MISSING).toContain('apt-get install etcd-server');
    const main = fileURLToPath(new URL('../../dist/compare/main.js', import.meta.url));
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx tsc -b\` first`);
    const r = spawnSync(process.execPath, [main, '--only', 'cas', '--etcd', '/nonexistent/etcd'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('apt-get install etcd-server');
  });
});
