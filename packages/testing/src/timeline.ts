/**
 * An SVG timeline of the recorded calls: one lane per client, one bar per
 * call from invocation to answer (green ok, grey failed, orange unknown,
 * open-ended when pending); the calls a failure names are outlined in red.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeCall } from './checks.js';
import type { RecordedCall } from './recorder.js';

/** Calls drawn at most (the latest ones). */
export const MAX_TIMELINE_CALLS = 2_000;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function timelineSvg(
  all: readonly RecordedCall[],
  highlight: readonly RecordedCall[],
  endMs: number,
  title: string,
): string {
  const calls = all.slice(-MAX_TIMELINE_CALLS);
  const lanes = [...new Set(calls.map((c) => `${c.client} ${c.model}`))].sort();
  const t0 = calls.length > 0 ? Math.min(...calls.map((c) => c.startMs)) : 0;
  const t1 = Math.max(endMs, t0 + 1);
  const W = 1200;
  const left = 160;
  const laneH = 22;
  const x = (t: number) => left + ((t - t0) / (t1 - t0)) * (W - left - 10);
  const marked = new Set(highlight.map((c) => c.id));
  const rows: string[] = [];
  lanes.forEach((lane, i) => {
    rows.push(`<text x="4" y="${40 + i * laneH + 14}" font-size="11">${esc(lane)}</text>`);
  });
  for (const c of calls) {
    const i = lanes.indexOf(`${c.client} ${c.model}`);
    const x0 = x(c.startMs);
    const x1 = Math.max(x0 + 2, x(c.endMs ?? t1));
    const fill = c.outcome === 'ok' ? '#6c6' : c.outcome === 'fail' ? '#bbb' : '#f90';
    const stroke = marked.has(c.id) ? ' stroke="red" stroke-width="2"' : '';
    rows.push(
      `<rect x="${x0.toFixed(1)}" y="${40 + i * laneH + 3}" width="${(x1 - x0).toFixed(1)}" height="${laneH - 6}" fill="${fill}"${stroke}><title>${esc(describeCall(c))}</title></rect>`,
    );
  }
  const h = 60 + lanes.length * laneH;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" font-family="monospace">`,
    `<title>${esc(title)}</title>`,
    `<text x="4" y="16" font-size="13">${esc(title)}</text>`,
    `<text x="${left}" y="32" font-size="10">${t0} ms</text><text x="${W - 80}" y="32" font-size="10">${t1} ms</text>`,
    ...rows,
    '</svg>',
    '',
  ].join('\n');
}

/** Writes the timeline under `dir` (PARLEY_SIM_OUT, default `<tmpdir>/parley-sim`) and returns its path. */
export function writeTimeline(
  svg: string,
  seed: number,
  dir = process.env.PARLEY_SIM_OUT || join(tmpdir(), 'parley-sim'),
): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `timeline-${seed}.svg`);
  writeFileSync(file, svg);
  return file;
}
