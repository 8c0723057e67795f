/**
 * A small SVG writer for the side-by-side charts: latency distributions (CDF
 * lines, one per system) and failover timelines (each trial's writes around
 * the kill). Pure: strings in, a string out.
 */

export interface Series {
  label: string;
  color: string;
  /** Latencies (ms) for a CDF. */
  values: readonly number[];
}

const W = 640;
const H = 320;
const M = { l: 56, r: 16, t: 32, b: 40 };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function frame(title: string, xLabel: string, yLabel: string, xMax: number, yTicks: string[], body: string): string {
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const ticks: string[] = [];
  for (let i = 0; i <= 5; i++) {
    const x = M.l + (pw * i) / 5;
    ticks.push(
      `<line x1="${x}" y1="${M.t + ph}" x2="${x}" y2="${M.t + ph + 4}" stroke="#333"/>`,
      `<text x="${x}" y="${M.t + ph + 16}" text-anchor="middle">${+((xMax * i) / 5).toFixed(2)}</text>`,
    );
  }
  yTicks.forEach((label, i) => {
    const y = M.t + ph - (ph * i) / (yTicks.length - 1);
    ticks.push(
      `<line x1="${M.l}" y1="${y}" x2="${M.l + pw}" y2="${y}" stroke="#eee"/>`,
      `<text x="${M.l - 6}" y="${y + 4}" text-anchor="end">${esc(label)}</text>`,
    );
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11" role="img">`,
    `<title>${esc(title)}</title>`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="13">${esc(title)}</text>`,
    ...ticks,
    `<line x1="${M.l}" y1="${M.t + ph}" x2="${M.l + pw}" y2="${M.t + ph}" stroke="#333"/>`,
    `<line x1="${M.l}" y1="${M.t}" x2="${M.l}" y2="${M.t + ph}" stroke="#333"/>`,
    `<text x="${M.l + pw / 2}" y="${H - 6}" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text x="14" y="${M.t + ph / 2}" text-anchor="middle" transform="rotate(-90 14 ${M.t + ph / 2})">${esc(yLabel)}</text>`,
    body,
    '</svg>',
  ].join('\n');
}

function legend(series: readonly { label: string; color: string }[]): string {
  return series
    .map(
      (s, i) =>
        `<rect x="${M.l + 10}" y="${M.t + 6 + i * 16}" width="10" height="10" fill="${s.color}"/><text x="${M.l + 24}" y="${M.t + 15 + i * 16}">${esc(s.label)}</text>`,
    )
    .join('\n');
}

/** Cumulative distribution of each series' latencies (x: ms up to the largest p99 × 1.2, y: fraction). */
export function cdfChart(title: string, series: readonly Series[]): string {
  const p99s = series.map((s) => {
    const sorted = [...s.values].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil(0.99 * sorted.length) - 1)] ?? 0;
  });
  const xMax = niceMax(Math.max(...p99s, 0) * 1.2);
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const lines = series.map((s) => {
    const sorted = [...s.values].sort((a, b) => a - b);
    const pts = sorted.map((v, i) => {
      const x = M.l + (pw * Math.min(v, xMax)) / xMax;
      const y = M.t + ph - (ph * (i + 1)) / sorted.length;
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>`;
  });
  return frame(
    title,
    'latency (ms)',
    'fraction of writes',
    xMax,
    ['0', '0.25', '0.5', '0.75', '1'],
    [...lines, legend(series)].join('\n'),
  );
}

export interface Timeline {
  label: string;
  color: string;
  /** One row per trial: ms since the kill of each acknowledged write (negative = before the kill). */
  trials: readonly (readonly number[])[];
}

/** Failover timelines: one row of dots per trial (writes acknowledged), the kill at x = 0. */
export function timelineChart(title: string, timelines: readonly Timeline[], fromMs: number, toMs: number): string {
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const rows = timelines.reduce((n, t) => n + t.trials.length, 0);
  const rowH = ph / Math.max(1, rows + timelines.length);
  const xOf = (ms: number) => M.l + (pw * (ms - fromMs)) / (toMs - fromMs);
  const body: string[] = [];
  let row = 0;
  for (const t of timelines) {
    for (const trial of t.trials) {
      const y = M.t + rowH * (row + 0.5);
      // One mark per pixel column: thousands of acks per trial would only repeat the same pixels.
      let lastX = Number.NEGATIVE_INFINITY;
      for (const ms of [...trial].sort((a, b) => a - b)) {
        if (ms < fromMs || ms > toMs || xOf(ms) - lastX < 1) continue;
        lastX = xOf(ms);
        body.push(
          `<rect x="${xOf(ms).toFixed(1)}" y="${(y - rowH * 0.3).toFixed(1)}" width="1.2" height="${(rowH * 0.6).toFixed(1)}" fill="${t.color}"/>`,
        );
      }
      row++;
    }
    row++;
  }
  body.push(`<line x1="${xOf(0)}" y1="${M.t}" x2="${xOf(0)}" y2="${M.t + ph}" stroke="#c00" stroke-dasharray="4 3"/>`);
  body.push(`<text x="${xOf(0) + 4}" y="${M.t + 10}" fill="#c00">kill -9 of the leader</text>`);
  const span = toMs - fromMs;
  const frameSvg = frame(
    title,
    `ms since the kill (from ${fromMs})`,
    'trials',
    span,
    ['', ''],
    [...body, legend(timelines)].join('\n'),
  );
  // x tick labels are spans from fromMs; relabel them as offsets from the kill.
  return frameSvg.replace(/<text x="([\d.]+)" y="(\d+)" text-anchor="middle">([-\d.]+)<\/text>/g, (m, x, y, v) =>
    Number(y) === M.t + ph + 16
      ? `<text x="${x}" y="${y}" text-anchor="middle">${Math.round(Number(v) + fromMs)}</text>`
      : m,
  );
}
