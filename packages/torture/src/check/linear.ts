/**
 * Linearizability, twice: `parley-check` (the project's checker, run as its
 * CLI on the EDN histories the run wrote) and the harness's own search
 * (`wgl.ts` with `models.ts`), on the same calls in the same order without the
 * time-aware fields. A verdict on which they disagree fails the run. For locks
 * and leases parley-check also checks the time-aware history (each acquire and
 * renew with its TTL and ε), beside the harness's own real-time checks (time.ts).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HistoryValue } from '@parley/check';
import type { Op, Recorder } from '../history.js';
import { entryCall, entryModel, grantCall, grantModel, toCheckOps, unseenHolders, unseenValues } from './models.js';
import { type CheckOp, checkKey, type SeqModel, type Verdict } from './wgl.js';

const PARLEY_CHECK = fileURLToPath(new URL('../../../check/bin/parley-check.js', import.meta.url));
/** Per key, the independent search gives up (verdict unknown) after this many steps. */
const MAX_STEPS = 2_000_000;

export interface LinearResult {
  readonly workload: string;
  readonly model: string;
  readonly operations: number;
  readonly parleyCheck: Verdict | 'error';
  readonly parleyCheckDetail: string;
  /** parley-check on the time-aware history (locks, leases). */
  readonly timeAware?: Verdict | 'error';
  readonly timeAwareDetail?: string;
  readonly own: Verdict;
  readonly ownDetail: string;
  readonly keys: number;
  readonly disagree: boolean;
}

const unseenEntry = unseenValues as (ops: readonly CheckOp<unknown>[]) => readonly CheckOp<unknown>[];
const unseenGrant = unseenHolders as (ops: readonly CheckOp<unknown>[]) => readonly CheckOp<unknown>[];

/** parley-check's model per workload, and the independent model's inputs. */
const FAMILIES: Record<
  string,
  {
    model: string;
    timeAware: boolean;
    own: () => {
      model: SeqModel<unknown, unknown>;
      convert: (op: Op) => unknown;
      /** The key's calls with the names nothing observes made one (models.ts). */
      unseen: (ops: readonly CheckOp<unknown>[]) => readonly CheckOp<unknown>[];
    };
  }
> = {
  register: {
    model: 'parley-entry',
    timeAware: false,
    own: () => ({ model: entryModel as SeqModel<unknown, unknown>, convert: entryCall, unseen: unseenEntry }),
  },
  claim: {
    model: 'parley-entry',
    timeAware: false,
    own: () => ({ model: entryModel as SeqModel<unknown, unknown>, convert: entryCall, unseen: unseenEntry }),
  },
  lock: {
    model: 'parley-lock',
    timeAware: true,
    own: () => ({
      model: grantModel as SeqModel<unknown, unknown>,
      convert: (op) => grantCall(op, { holder: 'owner', token: 'fence' }),
      unseen: unseenGrant,
    }),
  },
  lease: {
    model: 'parley-lease',
    timeAware: true,
    own: () => ({
      model: grantModel as SeqModel<unknown, unknown>,
      convert: (op) => grantCall(op, { holder: 'holder', token: 'epoch' }),
      unseen: unseenGrant,
    }),
  },
};

export const LINEAR_WORKLOADS = Object.keys(FAMILIES);

/** The invoke value without `ttlMs`/`skewMs`: the history without time. */
export function untimed(v: HistoryValue): HistoryValue {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const { ttlMs: _t, skewMs: _s, ...rest } = v as Record<string, HistoryValue>;
  return rest as HistoryValue;
}

function parleyCheck(
  model: string,
  file: string,
  timeoutMs: number,
): Promise<{ verdict: Verdict | 'error'; detail: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PARLEY_CHECK, '--model', model, '--json', '--timeout-ms', String(timeoutMs), file],
      { maxBuffer: 64 << 20, timeout: timeoutMs + 60_000 },
      (err, stdout, stderr) => {
        try {
          const r = JSON.parse(stdout) as {
            files: Array<{
              verdict: Verdict | 'error';
              reason?: string;
              error?: string;
              counterexample?: { key: string | null; blocked: string | null };
            }>;
          };
          const f = r.files[0];
          if (f === undefined) throw new Error('no file in the report');
          const ce = f.counterexample;
          resolve({
            verdict: f.verdict,
            detail: f.error ?? f.reason ?? (ce ? `key ${ce.key}: cannot linearize ${ce.blocked}` : ''),
          });
        } catch {
          resolve({ verdict: 'error', detail: `${err?.message ?? ''} ${stderr}`.trim().slice(0, 500) });
        }
      },
    );
  });
}

/** The independent checker's verdict on one workload's calls (every key). */
export function checkOwn(
  rec: Recorder,
  family: string,
  workload = family,
): { verdict: Verdict; detail: string; keys: number } {
  const fam = FAMILIES[family];
  if (fam === undefined) throw new Error(`no model for ${family}`);
  const { model, convert, unseen } = fam.own();
  const perKey = toCheckOps(rec.of(workload), rec.positions(), convert);
  let verdict: Verdict = 'linearizable';
  const details: string[] = [];
  for (const [key, ops] of perKey) {
    const r = checkKey(model, unseen(ops), MAX_STEPS);
    if (r.verdict === 'not linearizable') {
      verdict = 'not linearizable';
      details.push(`key ${key}: cannot linearize ${r.stuck}`);
    } else if (r.verdict === 'unknown' && verdict === 'linearizable') {
      verdict = 'unknown';
      details.push(`key ${key}: gave up after ${r.steps} steps`);
    }
  }
  return { verdict, detail: details.slice(0, 3).join('; '), keys: perKey.size };
}

/** Writes the workload's EDN histories into `dir` and checks them with both checkers. */
export async function checkLinearizable(
  rec: Recorder,
  workload: string,
  dir: string,
  timeoutMs: number,
): Promise<LinearResult> {
  const fam = FAMILIES[workload];
  if (fam === undefined) throw new Error(`no model for ${workload}`);
  const plainFile = join(dir, `${workload}.edn`);
  writeFileSync(plainFile, rec.edn(workload, untimed));
  const jobs: Array<Promise<{ verdict: Verdict | 'error'; detail: string }>> = [
    parleyCheck(fam.model, plainFile, timeoutMs),
  ];
  if (fam.timeAware) {
    const timedFile = join(dir, `${workload}-timed.edn`);
    writeFileSync(timedFile, rec.edn(workload));
    jobs.push(parleyCheck(fam.model, timedFile, timeoutMs));
  }
  const mine = checkOwn(rec, workload);
  const [plain, timed] = await Promise.all(jobs);
  const p = plain as { verdict: Verdict | 'error'; detail: string };
  const decided = (x: string) => x === 'linearizable' || x === 'not linearizable';
  return {
    workload,
    model: fam.model,
    operations: rec.of(workload).length,
    parleyCheck: p.verdict,
    parleyCheckDetail: p.detail,
    ...(timed === undefined ? {} : { timeAware: timed.verdict, timeAwareDetail: timed.detail }),
    own: mine.verdict,
    ownDetail: mine.detail,
    keys: mine.keys,
    disagree: decided(p.verdict) && decided(mine.verdict) && p.verdict !== mine.verdict,
  };
}
