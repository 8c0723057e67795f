/**
 * The run's timeline as SVG: a lane per workload, the faults as shaded bands
 * across every lane (labelled on top), and each violation as a red mark. A
 * short run draws every call (a line from its call to its reply, green ok,
 * amber fail, red unknown); a long one draws, per pixel column, how many calls
 * of each outcome began there.
 */
import type { FaultRecord, Op } from '../history.js';

const WIDTH = 1400;
const LEFT = 90;
const LANE = 46;
const TOP = 60;
const MAX_DRAWN_OPS = 6_000;
const COLORS = { ok: '#2e9d4a', fail: '#e0a100', info: '#d1342f' } as const;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function timelineSvg(
  ops: readonly Op[],
  faults: readonly FaultRecord[],
  violations: ReadonlyArray<{ workload: string; atMs: number; message: string }>,
  lanes: readonly string[],
  endMs: number,
): string {
  const span = Math.max(1, endMs);
  const x = (t: number) => LEFT + (Math.max(0, Math.min(t, span)) / span) * (WIDTH - LEFT - 10);
  const height = TOP + lanes.length * LANE + 40;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">`,
  );
  parts.push(`<rect width="100%" height="100%" fill="#fff"/>`);
  faults.forEach((f, i) => {
    const x0 = x(f.startMs);
    const x1 = Math.max(x0 + 1, x(f.endMs ?? endMs));
    parts.push(
      `<rect x="${x0}" y="${TOP - 8}" width="${x1 - x0}" height="${lanes.length * LANE + 8}" fill="#5a6bd6" opacity="0.13"><title>${esc(`fault ${f.id}: ${f.detail}`)}</title></rect>`,
    );
    parts.push(
      `<text x="${x0 + 2}" y="${12 + (i % 4) * 11}" fill="#33408f">${esc(`${f.id} ${f.kind} ${f.targets.join(',')}`)}</text>`,
    );
  });
  lanes.forEach((lane, i) => {
    const y = TOP + i * LANE;
    parts.push(`<text x="4" y="${y + LANE / 2}">${esc(lane)}</text>`);
    parts.push(`<line x1="${LEFT}" x2="${WIDTH - 10}" y1="${y + LANE - 2}" y2="${y + LANE - 2}" stroke="#ddd"/>`);
  });
  const laneOf = new Map(lanes.map((l, i) => [l, i]));
  if (ops.length <= MAX_DRAWN_OPS) {
    for (const op of ops) {
      const lane = laneOf.get(op.workload);
      if (lane === undefined) continue;
      const y = TOP + lane * LANE + 3 + (op.process % 12) * 3.4;
      const color = COLORS[op.type ?? 'info'];
      parts.push(
        `<line x1="${x(op.invokeMs)}" x2="${Math.max(x(op.invokeMs) + 0.8, x(op.completeMs ?? endMs))}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="2.4"><title>${esc(`op ${op.id} ${op.f} ${op.key} via ${op.node}: ${op.type}${op.error ? ` ${op.error}` : ''}`)}</title></line>`,
      );
    }
  } else {
    const columns = WIDTH - LEFT - 10;
    for (const [lane, i] of laneOf) {
      const counts = Array.from({ length: columns + 1 }, () => ({ ok: 0, fail: 0, info: 0 }));
      let peak = 1;
      for (const op of ops) {
        if (op.workload !== lane) continue;
        const c = counts[Math.floor(x(op.invokeMs) - LEFT)];
        if (c === undefined) continue;
        c[op.type ?? 'info']++;
        peak = Math.max(peak, c.ok + c.fail + c.info);
      }
      counts.forEach((c, col) => {
        let y = TOP + i * LANE + LANE - 3;
        for (const k of ['ok', 'fail', 'info'] as const) {
          if (c[k] === 0) continue;
          const h = (c[k] / peak) * (LANE - 6);
          y -= h;
          parts.push(
            `<rect x="${LEFT + col}" y="${y.toFixed(1)}" width="1" height="${h.toFixed(1)}" fill="${COLORS[k]}"/>`,
          );
        }
      });
    }
  }
  for (const v of violations) {
    const lane = laneOf.get(v.workload) ?? 0;
    const y = TOP + lane * LANE;
    parts.push(
      `<line x1="${x(v.atMs)}" x2="${x(v.atMs)}" y1="${y}" y2="${y + LANE - 2}" stroke="#b00" stroke-width="2"><title>${esc(v.message)}</title></line>`,
    );
  }
  const axisY = TOP + lanes.length * LANE + 14;
  const stepS = Math.max(1, Math.ceil(span / 1000 / 12));
  for (let s = 0; s * 1000 <= span; s += stepS)
    parts.push(`<text x="${x(s * 1000)}" y="${axisY}" fill="#555">${s}s</text>`);
  parts.push(
    `<text x="${LEFT}" y="${axisY + 16}" fill="#555">green ok · amber fail · red unknown outcome · blue bands: faults · dark red marks: violations</text>`,
  );
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
