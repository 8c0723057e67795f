/**
 * The rows of the side-by-side table: @parley/bench's {name, unit, value,
 * anchor, anchorValue, ratio} plus the spread over repetitions and, where the
 * issue sets one, the target and whether it was met.
 */
import { type BenchResult, toResult } from '../index.js';
import type { Spread } from './stats.js';

export type Direction = 'higher' | 'lower';

export interface Target {
  /** Human text, e.g. "≥ 2× etcd". */
  text: string;
  met: boolean;
}

export interface CompareRow extends BenchResult {
  better: Direction;
  spread?: { value: Spread; anchor?: Spread };
  target?: Target;
}

/** A row comparing `value` (Parley) with `anchorValue` (the anchor), both medians of their repetitions. */
export function compareRow(r: {
  name: string;
  unit: string;
  better: Direction;
  value: Spread;
  anchor?: string;
  anchorValue?: Spread;
  target?: (value: number, anchorValue: number | null) => Target;
}): CompareRow {
  const base = toResult({
    name: r.name,
    unit: r.unit,
    value: r.value.median,
    ...(r.anchor !== undefined && r.anchorValue ? { anchor: r.anchor, anchorValue: r.anchorValue.median } : {}),
  });
  return {
    ...base,
    better: r.better,
    spread: { value: r.value, ...(r.anchorValue ? { anchor: r.anchorValue } : {}) },
    ...(r.target ? { target: r.target(base.value, base.anchorValue) } : {}),
  };
}

/** Target "value ≥ k × anchor" (k = 1: at least the anchor). */
export function atLeast(k: number, what = 'etcd'): (v: number, a: number | null) => Target {
  return (v, a) => ({ text: `≥ ${k}× ${what}`, met: a !== null && v >= k * a });
}

/** Target "value ≤ anchor". */
export function atMostAnchor(what = 'etcd'): (v: number, a: number | null) => Target {
  return (v, a) => ({ text: `≤ ${what}`, met: a !== null && v <= a });
}

/** Target "value ≤ limit" (absolute). */
export function atMost(limit: number, unit: string): (v: number) => Target {
  return (v) => ({ text: `≤ ${limit} ${unit}`, met: v <= limit });
}

function fmt(n: number | null): string {
  if (n === null || Number.isNaN(n)) return '—';
  const abs = Math.abs(n);
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US');
  if (abs >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** The one table: medians, spread (min–max), ratio and target. */
export function formatCompareTable(title: string, rows: readonly CompareRow[]): string {
  const header = ['benchmark', 'unit', 'parley', 'spread', 'anchor', 'anchor value', 'spread', 'ratio', 'target'];
  const cells = rows.map((r) => [
    r.name,
    r.unit,
    fmt(r.value),
    r.spread ? `${fmt(r.spread.value.min)}–${fmt(r.spread.value.max)}` : '',
    r.anchor ?? '—',
    fmt(r.anchorValue),
    r.spread?.anchor ? `${fmt(r.spread.anchor.min)}–${fmt(r.spread.anchor.max)}` : '',
    r.ratio === null ? '—' : `${r.ratio.toFixed(2)}×`,
    r.target ? `${r.target.text}: ${r.target.met ? 'met' : 'MISSED'}` : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [title, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

/** The same table as Markdown, for docs/benchmarks.md. */
export function markdownTable(rows: readonly CompareRow[]): string {
  const out = [
    '| benchmark | unit | Parley (median) | spread | anchor | anchor (median) | spread | ratio | target |',
    '|---|---|--:|---|---|--:|---|--:|---|',
  ];
  for (const r of rows) {
    out.push(
      `| ${r.name} | ${r.unit} | ${fmt(r.value)} | ${r.spread ? `${fmt(r.spread.value.min)}–${fmt(r.spread.value.max)}` : ''} | ${r.anchor ?? '—'} | ${fmt(r.anchorValue)} | ${r.spread?.anchor ? `${fmt(r.spread.anchor.min)}–${fmt(r.spread.anchor.max)}` : ''} | ${r.ratio === null ? '—' : `${r.ratio.toFixed(2)}×`} | ${r.target ? `${r.target.text}: **${r.target.met ? 'met' : 'missed'}**` : ''} |`,
    );
  }
  return out.join('\n');
}
