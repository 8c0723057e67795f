/**
 * The runner's report: a markdown file and an SVG chart of convergence
 * times, written to `simulations/reports/`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { guardLines, quantile, type SweepResult, summaryLine } from './sweep.js';

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];

function escapeXml(s: string): string {
  return s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
}

/** Cumulative distribution of convergence times, one line per scenario. */
export function convergenceSvg(result: SweepResult): string {
  const width = 720;
  const height = 360;
  const left = 60;
  const right = 200;
  const top = 30;
  const bottom = 50;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const all = result.perScenario.flatMap((s) => s.convergenceMs);
  const maxMs = Math.max(1, ...all);
  const x = (ms: number) => left + (ms / maxMs) * plotW;
  const y = (frac: number) => top + (1 - frac) * plotH;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
  );
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  parts.push(
    `<text x="${left}" y="18" font-size="13">Convergence time after healing (CDF over seeds ${result.firstSeed}..${result.firstSeed + result.summary.seeds - 1})</text>`,
  );
  parts.push(
    `<line x1="${left}" y1="${y(0)}" x2="${left + plotW}" y2="${y(0)}" stroke="black"/><line x1="${left}" y1="${y(0)}" x2="${left}" y2="${y(1)}" stroke="black"/>`,
  );
  for (let i = 0; i <= 4; i++) {
    const frac = i / 4;
    parts.push(
      `<text x="${left - 6}" y="${y(frac) + 4}" text-anchor="end">${Math.round(frac * 100)}%</text><line x1="${left}" y1="${y(frac)}" x2="${left + plotW}" y2="${y(frac)}" stroke="#eee"/>`,
    );
    const ms = Math.round((maxMs * i) / 4);
    parts.push(`<text x="${x(ms)}" y="${y(0) + 16}" text-anchor="middle">${ms}</text>`);
  }
  parts.push(`<text x="${left + plotW / 2}" y="${height - 12}" text-anchor="middle">simulated ms</text>`);
  result.perScenario.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const sorted = [...s.convergenceMs].sort((a, b) => a - b);
    if (sorted.length > 0) {
      // At most 100 steps per curve: the chart stays small however many seeds ran.
      const pts: string[] = [`${x(0).toFixed(1)},${y(0).toFixed(1)}`];
      const steps = Math.min(100, sorted.length);
      let prevFrac = 0;
      for (let j = 1; j <= steps; j++) {
        const count = Math.ceil((j * sorted.length) / steps);
        const ms = sorted[count - 1]!;
        const frac = count / s.runs;
        pts.push(`${x(ms).toFixed(1)},${y(prevFrac).toFixed(1)}`, `${x(ms).toFixed(1)},${y(frac).toFixed(1)}`);
        prevFrac = frac;
      }
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${pts.join(' ')}"/>`);
    }
    const ly = top + 10 + i * 16;
    parts.push(
      `<rect x="${left + plotW + 14}" y="${ly - 8}" width="10" height="10" fill="${color}"/><text x="${left + plotW + 28}" y="${ly + 1}">${escapeXml(s.scenario)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

export function reportMarkdown(result: SweepResult, svgName: string, wallSeconds: number, command: string): string {
  const { summary } = result;
  const lines: string[] = [];
  lines.push('# Simulation report', '');
  lines.push(`Command: \`${command}\``, '');
  lines.push(
    `Seeds ${result.firstSeed}..${result.firstSeed + summary.seeds - 1} per scenario; wall time ${wallSeconds.toFixed(1)} s.`,
    '',
  );
  lines.push(`**${summaryLineMd(result)}**`, '');
  lines.push('| scenario | runs | failures | convergence p50 ms | p90 ms | max ms | simulated s/run | events/run |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of result.perScenario) {
    const sorted = [...s.convergenceMs].sort((a, b) => a - b);
    const f = (v: number | undefined) => (v === undefined ? '—' : String(v));
    lines.push(
      `| ${s.scenario} | ${s.runs} | ${s.failures} | ${f(quantile(sorted, 0.5))} | ${f(quantile(sorted, 0.9))} | ${f(sorted.at(-1))} | ${(s.simulatedMs / Math.max(1, s.runs) / 1000).toFixed(1)} | ${Math.round(s.steps / Math.max(1, s.runs))} |`,
    );
  }
  lines.push('', `![convergence times](${svgName})`, '');
  lines.push('## Scenarios', '');
  for (const s of result.perScenario) {
    const metrics = Object.entries(s.metrics)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    lines.push(`- **${s.scenario}** — ${s.description}${metrics ? ` Totals: ${metrics}.` : ''}`);
  }
  lines.push('', '## Failures', '');
  if (summary.failures.length === 0) lines.push('None.');
  for (const f of summary.failures.slice(0, 100)) {
    lines.push(
      `- \`${f.scenario}\` seed ${f.seed} (${f.kind}): ${f.message} — replay: \`npm run sim -- --scenario ${f.scenario} --seed ${f.seed}\``,
    );
  }
  if (summary.failures.length > 100) lines.push(`- … and ${summary.failures.length - 100} more (see --json).`);
  lines.push('', '## Guards', '');
  if (summary.guards.length === 0) lines.push('No scenario of this sweep reports guard counters.');
  for (const line of guardLines(summary)) lines.push(`- ${line}`);
  lines.push('', '## Checks that ended unknown', '');
  if (summary.inconclusive.length === 0) lines.push('None.');
  for (const u of summary.inconclusive.slice(0, 100)) {
    lines.push(
      `- \`${u.scenario}\` seed ${u.seed}: ${u.checks.join('; ')} — replay: \`npm run sim -- --scenario ${u.scenario} --seed ${u.seed}\``,
    );
  }
  lines.push('');
  return lines.join('\n');
}

function summaryLineMd(result: SweepResult): string {
  return summaryLine(result.summary);
}

/** Writes `<name>.md` and `<name>.svg` into `dir`; returns the markdown path. */
export async function writeReport(
  dir: string,
  name: string,
  result: SweepResult,
  wallSeconds: number,
  command: string,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const svgName = `${name}.svg`;
  await writeFile(join(dir, svgName), convergenceSvg(result));
  const mdPath = join(dir, `${name}.md`);
  await writeFile(mdPath, reportMarkdown(result, svgName, wallSeconds, command));
  return mdPath;
}
