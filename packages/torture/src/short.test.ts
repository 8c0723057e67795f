/**
 * The short form of the torture run, in `npm test` (packages/torture/src/short.ts):
 * real `parley serve` processes (the built CLI: run `npx tsc -b` first), every
 * workload at once, one fault of each cheap kind, every check; any violation or
 * undecided check fails it. Under CI=true a missing system package (iptables,
 * libfaketime, tmpfs) or root fails it too (preflight), never skips a fault.
 * The run's output stays in the temp dir when it fails.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { summaryText } from './report/summary.js';
import { runTorture } from './run.js';
import { SHORT_SCHEDULE, shortOptions } from './short.js';

describe('torture, short form', () => {
  it('every workload under a paused leader, an isolated leader, clock offsets and an outage: no violation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-torture-short-'));
    chmodSync(dir, 0o755); // the nodes run under uids of their own
    const file = join(dir, 'schedule.json');
    writeFileSync(file, JSON.stringify(SHORT_SCHEDULE));
    const result = await runTorture(
      shortOptions(file, join(dir, 'out'), (l) => process.stderr.write(`torture: ${l}\n`)),
    );
    const text = summaryText(result);
    expect(result.violations, text).toEqual([]);
    expect(result.inconclusive, text).toEqual([]);
    expect(
      result.workloads.filter((w) => w.ok === 0).map((w) => w.name),
      text,
    ).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  }, 600_000);
});
