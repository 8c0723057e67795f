/**
 * ops/: the Prometheus alert rules and the Grafana dashboard. promtool (Debian's
 * `prometheus` package) parses the rules and evaluates each alert on the series of
 * parley-alerts.test.yml; it parses every dashboard query too (as recording rules). Then
 * every series the rules and the dashboard name must be one a real node's /metrics
 * exports, and the new series carry real values (a leader's term, an error's code, a
 * lock wait).
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ROOT, type Started, startParley } from './http-harness.js';

const RULES = join(ROOT, 'ops/prometheus/parley-alerts.yml');
const RULE_TESTS = join(ROOT, 'ops/prometheus/parley-alerts.test.yml');
const DASHBOARD = join(ROOT, 'ops/grafana/parley-dashboard.json');

function hasPromtool(): boolean {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const PROMTOOL = hasPromtool();
if (!PROMTOOL && process.env.CI === 'true') {
  throw new Error('promtool is missing (apt-get install prometheus): the alert rules cannot be checked');
}
if (!PROMTOOL)
  console.warn('SKIPPING the promtool checks of ops/: promtool is not installed (apt-get install prometheus)');

const promtool = (...args: string[]) =>
  new Promise<{ code: number; out: string }>((resolve) => {
    execFile('promtool', args, { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr }),
    );
  });

/** The PromQL expressions of the dashboard, with its variables replaced by what Prometheus takes. */
async function dashboardExprs(): Promise<string[]> {
  const dash = JSON.parse(await readFile(DASHBOARD, 'utf8')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
  };
  return dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr.replaceAll('$job', '.*')));
}

/** Every parley_* metric name in `text` (rules and queries name only Parley's series). */
const namesIn = (text: string) => new Set(text.match(/\bparley_[a-z_]+\b/g) ?? []);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'parley-ops-'));
});
afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!PROMTOOL)('promtool', () => {
  it('parses the alert rules and every alert fires (and only where it should) on its test series', async () => {
    const check = await promtool('check', 'rules', RULES);
    expect(check.code, check.out).toBe(0);
    expect(check.out).toContain('SUCCESS: 6 rules found');
    const test = await promtool('test', 'rules', RULE_TESTS);
    expect(test.code, test.out).toBe(0);
  });

  it('parses every query of the Grafana dashboard', async () => {
    const exprs = await dashboardExprs();
    expect(exprs.length).toBeGreaterThanOrEqual(8);
    const file = join(dir, 'dashboard-queries.yml');
    const rules = exprs.map(
      (e, i) => `      - record: parley:dashboard_query_${i}\n        expr: ${JSON.stringify(e)}`,
    );
    await writeFile(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
    const check = await promtool('check', 'rules', file);
    expect(check.code, check.out).toBe(0);
  });
});

describe('the series of the rules and the dashboard', () => {
  let p: Started;
  beforeAll(async () => {
    p = await startParley();
  });
  afterAll(async () => {
    await p?.close();
  });

  it("exist in a real node's /metrics, with real values", async () => {
    // Events behind the labelled series: a strong write, a refused fenced write, a lock wait.
    await api(p.url, 'POST', '/api/v1/distributed-state/ops/k', { body: { value: 1 } });
    const fenced = await api(p.url, 'POST', '/api/v1/distributed-state/ops/f', { body: { value: 1, fence: 9 } });
    expect(fenced.body.error).toBe('fence_stale');
    await api(p.url, 'POST', '/api/v1/locks/ops/l', { body: { owner: 'a', wait_seconds: 1 } });
    const text = (await api(p.url, 'GET', '/metrics')).text;

    // A family exists once the node declares it (# TYPE); histograms add _bucket, _sum, _count.
    const exported = new Set<string>();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      exported.add(m[1]!);
      if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(`${m[1]}${s}`);
    }
    const named = new Set([...namesIn(await readFile(RULES, 'utf8')), ...namesIn((await dashboardExprs()).join('\n'))]);
    // Alert annotations mention a few more series in prose; they must exist too.
    expect(named.size).toBeGreaterThan(8);
    expect([...named].filter((n) => !exported.has(n))).toEqual([]);

    const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
    const term = value(/^parley_raft_term (\d+)$/m);
    expect(term).toBeGreaterThan(0);
    expect(value(/^parley_raft_leader_term (\d+)$/m)).toBe(term); // a one-node group: it leads
    expect(value(/^parley_http_errors_total\{code="fence_stale",route="[^"]+"\} (\d+)$/m)).toBe(1);
    expect(value(/^parley_lock_wait_seconds_count\{granted="true"\} (\d+)$/m)).toBe(1);
    expect(value(/^parley_raft_commit_latency_seconds_count (\d+)$/m)).toBeGreaterThan(0);
  });
});
