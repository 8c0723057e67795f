/**
 * Time-aware checks against the harness's clock (which no nemesis moves),
 * written apart from parley-check's time-aware models: with ε the run's clock
 * bound (docs/guarantees.md, "Time, TTLs and the skew bound"),
 * - mutual exclusion in real time: a lock or lease granted with TTL T at a
 *   call invoked at t (or renewed at t) is not granted to anyone else, read as
 *   free, or refused to its holder as over, by a call completing before
 *   t + T − ε, unless its holder released it first;
 * - TTL'd entries, never early: no read completing before t + T − ε finds the
 *   entry gone, and no create-only write completing then succeeds;
 * - never extended: a read invoked after the acknowledgement + T + ε does not
 *   find the entry, and a create-only write invoked then is not refused —
 *   except during the catch-up after a leaderless stretch, which
 *   docs/guarantees.md excuses (what was due falls due late); the stretches
 *   are read from the history: gaps longer than `maxTimeStepMs` (5 s) between
 *   successful strong writes;
 * - reported times: `created_at`, `expires_at`, `deadline_at` within ε of the
 *   real time of the call that set them.
 */
import type { Op } from '../history.js';

export interface Violation {
  readonly check: string;
  readonly workload: string;
  readonly key: string;
  readonly message: string;
  readonly atMs: number;
}

const ms = (x: number) => `${Math.round(x)} ms`;

type Names = { readonly holder: string; readonly token: string };
const get = (v: unknown, k: string): unknown =>
  v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;

/** Groups a workload's calls by key, in invocation order. */
function byKey(ops: readonly Op[]): Map<string, Op[]> {
  const m = new Map<string, Op[]>();
  for (const op of ops) {
    const l = m.get(op.key) ?? [];
    l.push(op);
    m.set(op.key, l);
  }
  return m;
}

export function checkGrantTimes(workload: string, ops: readonly Op[], names: Names, skewMs: number): Violation[] {
  const out: Violation[] = [];
  for (const [key, list] of byKey(ops)) {
    const grants = list.filter((o) => o.f === 'acquire' && o.type === 'ok');
    for (const g of grants) {
      const holder = get(g.value, names.holder) as string;
      const token = get(g.result, names.token) as number;
      const ttlMs = get(g.value, 'ttlMs') as number;
      const mine = (o: Op) => get(o.value, names.holder) === holder && get(o.value, names.token) === token;
      const releases = list.filter((o) => o.f === 'release' && mine(o) && o.type !== 'fail').map((o) => o.invokeMs);
      const renewals = list.filter((o) => o.f === 'renew' && mine(o) && o.type === 'ok');
      /** The grant surely lasts until this instant, for a call completing at `at`. */
      const until = (at: number) => {
        if (releases.some((r) => r < at)) return Number.NEGATIVE_INFINITY;
        let u = g.invokeMs + ttlMs;
        for (const r of renewals) if (r.invokeMs < at) u = Math.max(u, r.invokeMs + (get(r.value, 'ttlMs') as number));
        return u - skewMs;
      };
      for (const o of list) {
        if (o === g || o.completeMs === undefined) continue;
        const at = o.completeMs;
        const bound = until(at);
        if (at >= bound) continue;
        const early = `${ms(bound - at)} before ${holder}'s grant (token ${token}, TTL ${ttlMs / 1000} s, invoked at ${ms(g.invokeMs)}) could end`;
        if (
          o.f === 'acquire' &&
          o.type === 'ok' &&
          get(o.result, names.token) !== token &&
          (get(o.result, names.token) as number) > token
        ) {
          out.push({
            check: 'mutual exclusion',
            workload,
            key,
            atMs: at,
            message: `${get(o.value, names.holder)} was granted token ${get(o.result, names.token)} at ${ms(at)}, ${early}`,
          });
        } else if (o.f === 'get' && o.type === 'ok' && o.result === null && o.invokeMs > (g.completeMs as number)) {
          out.push({
            check: 'mutual exclusion',
            workload,
            key,
            atMs: at,
            message: `a read found it free at ${ms(at)}, ${early}`,
          });
        } else if ((o.f === 'renew' || o.f === 'write') && mine(o) && o.type === 'fail' && o.error === 'lease_lost') {
          out.push({
            check: 'mutual exclusion',
            workload,
            key,
            atMs: at,
            message: `${holder}'s ${o.f} was refused as lost at ${ms(at)}, ${early}`,
          });
        }
      }
    }
  }
  return out;
}

/** State-machine time may lag the clocks after a leaderless stretch longer than this (coord's default step). */
export const MAX_TIME_STEP_MS = 5_000;

/**
 * Windows in which state-machine time may lag the clocks: from the start of each gap longer
 * than the step between successful strong writes (no leader proposed) until it has caught
 * up — one step per command, with the leader's `expire` every second at least, so within a
 * quarter of the lag; half of the gap plus 2 s is allowed.
 */
export function catchUpWindows(strongOps: readonly Op[]): Array<[number, number]> {
  const done = strongOps
    .filter((o) => o.type === 'ok' && o.f !== 'get' && o.completeMs !== undefined)
    .map((o) => o.completeMs as number)
    .sort((a, b) => a - b);
  const out: Array<[number, number]> = [];
  for (let i = 1; i < done.length; i++) {
    const gap = (done[i] as number) - (done[i - 1] as number);
    if (gap > MAX_TIME_STEP_MS) out.push([done[i - 1] as number, (done[i] as number) + gap / 2 + 2_000]);
  }
  return out;
}

export function checkEntryTimes(
  workload: string,
  ops: readonly Op[],
  skewMs: number,
  catchUp: ReadonlyArray<[number, number]> = [],
): { violations: Violation[]; excused: number } {
  const out: Violation[] = [];
  let excused = 0;
  for (const [key, list] of byKey(ops)) {
    const w = list.find((o) => o.f === 'create' && o.type === 'ok');
    if (w === undefined) continue;
    const ttlMs = get(w.value, 'ttlMs') as number;
    const value = get(w.value, 'value');
    const earliest = w.invokeMs + ttlMs - skewMs;
    const latest = (w.completeMs as number) + ttlMs + skewMs;
    for (const o of list) {
      if (o === w || o.completeMs === undefined || o.invokeMs < (w.completeMs as number)) continue;
      const gone = (o.f === 'get' && o.type === 'ok' && o.result === null) || (o.f === 'take' && o.type === 'ok');
      if (gone && o.completeMs < earliest) {
        const what = o.f === 'get' ? 'read as gone' : 'taken over by a create-only write';
        out.push({
          check: 'never early',
          workload,
          key,
          atMs: o.completeMs,
          message: `written with TTL ${ttlMs / 1000} s at ${ms(w.invokeMs)}, ${what} at ${ms(o.completeMs)}: ${ms(earliest - o.completeMs)} early`,
        });
      }
      const present =
        (o.f === 'get' && o.type === 'ok' && get(o.result, 'value') === value) ||
        (o.f === 'take' && o.type === 'fail' && o.error === 'key_already_exists');
      // A take whose outcome is unknown may have made a new entry: it excuses a refusal after it.
      const takenUnknown = list.some((t) => t.f === 'take' && t.type === 'info' && t.invokeMs < o.invokeMs);
      if (present && o.invokeMs > latest && !(o.f === 'take' && takenUnknown)) {
        // Read while state-machine time may still lag the clocks: late by design.
        if (catchUp.some(([a, b]) => o.invokeMs >= a && o.invokeMs <= b)) {
          excused++;
          continue;
        }
        out.push({
          check: 'never extended',
          workload,
          key,
          atMs: o.invokeMs,
          message: `written with TTL ${ttlMs / 1000} s, acknowledged at ${ms(w.completeMs as number)}, still there for a call invoked at ${ms(o.invokeMs)}: ${ms(o.invokeMs - latest)} late`,
        });
      }
    }
  }
  return { violations: out, excused };
}

/** `at` (an ISO time the node reported) against the real time of the call: within [invoke − ε, complete + ε], shifted by `plusMs`. */
function wallFits(op: Op, at: string | undefined, plusMs: number, skewMs: number): number | undefined {
  if (at === undefined) return undefined;
  const t = Date.parse(at);
  if (!Number.isFinite(t)) return undefined;
  const lo = op.invokeWall + plusMs - skewMs;
  const hi = (op.completeWall as number) + plusMs + skewMs;
  if (t < lo) return t - lo;
  if (t > hi) return t - hi;
  return undefined;
}

/** The times nodes report for what they granted or wrote, against the real time of the call. */
export function checkReportedTimes(workload: string, ops: readonly Op[], skewMs: number): Violation[] {
  const out: Violation[] = [];
  for (const op of ops) {
    if (op.type !== 'ok' || op.extra === undefined) continue;
    const ttlMs = (get(op.value, 'ttlMs') as number | undefined) ?? 0;
    // Only calls that set the times: a create or take, and a grant.
    if (op.f !== 'create' && op.f !== 'take' && op.f !== 'acquire') continue;
    const checks: Array<[string, string | undefined, number]> = [
      ['created_at', op.extra.createdAt as string | undefined, 0],
      ['expires_at', op.extra.expiresAt as string | undefined, ttlMs],
      ['deadline_at', op.extra.deadlineAt as string | undefined, ttlMs],
    ];
    for (const [name, at, plus] of checks) {
      const off = wallFits(op, at, plus, skewMs);
      if (off === undefined) continue;
      out.push({
        check: 'reported time',
        workload,
        key: op.key,
        atMs: op.completeMs as number,
        message: `${op.f} at ${ms(op.invokeMs)} reported ${name} ${at}, ${ms(Math.abs(off))} ${off < 0 ? 'before' : 'after'} the real time allows (ε ${skewMs} ms)`,
      });
    }
  }
  return out;
}
