/** The run's summary: the table printed at the end of every run and written to summary.txt. */
import type { Availability } from '../check/availability.js';
import type { LinearResult } from '../check/linear.js';
import type { Violation } from '../check/time.js';

export interface WorkloadCount {
  readonly name: string;
  readonly ops: number;
  readonly ok: number;
  readonly fail: number;
  readonly info: number;
}

export interface RunResult {
  readonly seed: number;
  readonly backend: string;
  readonly durationMs: number;
  readonly outDir: string;
  readonly processes: readonly string[];
  readonly skewMs: number;
  readonly workloads: readonly WorkloadCount[];
  readonly linear: readonly LinearResult[];
  readonly violations: readonly Violation[];
  readonly availability: readonly Availability[];
  readonly notes: readonly string[];
  /** Checks that could not decide (a checker gave up): the run does not pass with any. */
  readonly inconclusive: readonly string[];
  readonly passed: boolean;
  readonly replay: string;
}

function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const ms = (x: number | null) =>
  x === null ? '-' : x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`;

export function summaryText(r: RunResult): string {
  const out: string[] = [];
  out.push(
    `torture run: seed ${r.seed}, backend ${r.backend}, ${(r.durationMs / 1000).toFixed(0)} s, processes ${r.processes.join(' ')}, ε ${r.skewMs} ms`,
  );
  out.push(`output: ${r.outDir}`);
  out.push('');
  const lin = new Map(r.linear.map((l) => [l.workload, l]));
  out.push(
    table(
      ['workload', 'calls', 'ok', 'fail', 'unknown', 'parley-check', 'own checker', 'time-aware', 'violations'],
      r.workloads.map((w) => {
        const l = lin.get(w.name);
        const n = r.violations.filter((v) => v.workload === w.name).length;
        return [
          w.name,
          String(w.ops),
          String(w.ok),
          String(w.fail),
          String(w.info),
          l?.parleyCheck ?? '-',
          l?.own ?? '-',
          l?.timeAware ?? '-',
          String(n),
        ];
      }),
    ),
  );
  const checks = new Map<string, number>();
  for (const v of r.violations) checks.set(v.check, (checks.get(v.check) ?? 0) + 1);
  out.push('');
  out.push(
    `checks: ${['linearizability', 'checker agreement', 'mutual exclusion', 'never early', 'never extended', 'reported time', 'durability', 'watch', 'eventual'].map((c) => `${c} ${checks.get(c) ?? 0}`).join(', ')}`,
  );
  if (r.availability.length > 0) {
    out.push('');
    out.push(
      table(
        [
          'fault',
          'what',
          'lasted',
          'to first ok',
          'heal to ok',
          'calls via hit',
          'ok',
          '503',
          'median 503',
          'timeout',
          'median wait',
          'max wait',
        ],
        r.availability.map((a) => [
          String(a.fault.id),
          a.fault.detail.length > 60 ? `${a.fault.detail.slice(0, 57)}...` : a.fault.detail,
          ms((a.fault.endMs ?? a.fault.startMs) - a.fault.startMs),
          ms(a.toFirstOk),
          ms(a.healToFirstOk),
          String(a.via.calls),
          String(a.via.ok),
          String(a.via.unavailable),
          ms(a.via.median503Ms),
          String(a.via.timedOut),
          ms(a.via.medianFailMs),
          ms(a.via.maxFailMs),
        ]),
      ),
    );
    for (const a of r.availability)
      if (a.fault.notes.length > 0) out.push(`  fault ${a.fault.id}: ${a.fault.notes.join('; ')}`);
  }
  for (const n of r.notes) out.push(`note: ${n}`);
  if (r.violations.length > 0) {
    out.push('');
    out.push(`violations (${r.violations.length}; first 25):`);
    for (const v of [...r.violations].sort((a, b) => a.atMs - b.atMs).slice(0, 25))
      out.push(`  [${v.check}] ${v.workload} ${v.key} @${ms(v.atMs)}: ${v.message}`);
  }
  for (const i of r.inconclusive) out.push(`inconclusive: ${i}`);
  out.push('');
  out.push(
    r.passed
      ? 'PASS'
      : `FAIL: ${r.violations.length} violations${r.inconclusive.length ? `, ${r.inconclusive.length} inconclusive` : ''}`,
  );
  if (!r.passed) {
    out.push(`seed ${r.seed}; replay this fault schedule with:`);
    out.push(`  ${r.replay}`);
  }
  return `${out.join('\n')}\n`;
}
