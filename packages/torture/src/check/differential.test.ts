/**
 * The independent checker against parley-check's library on random histories:
 * histories of a simulated strong entry and a simulated lock (Parley's rules,
 * with grants that may run out unseen), with concurrent calls, lost replies,
 * and in a third of them one answer changed — so both verdicts occur. The two
 * checkers share no code; every history must get the same verdict from both.
 */

import type { Model } from '@parley/check';
import { checkLinearizability, parleyEntryModel, parleyLockModel } from '@parley/check';
import { describe, expect, it } from 'vitest';
import { type Op, Recorder } from '../history.js';
import { Random } from '../random.js';
import { checkOwn, untimed } from './linear.js';

type Sys = {
  apply(p: number, f: string, arg: Record<string, unknown>): { type: 'ok' | 'fail'; result: unknown; error?: string };
};

/** A strong entry as Parley applies it. */
function entrySystem(): Sys {
  let cur: { value: unknown; version: string } | null = null;
  let n = 0;
  return {
    apply(_p, f, arg) {
      if (f === 'get')
        return cur === null
          ? { type: 'fail', result: null, error: 'key_not_found' }
          : { type: 'ok', result: { ...cur } };
      if (f === 'claim') {
        if (cur !== null) return { type: 'ok', result: { won: false, value: cur.value, version: cur.version } };
        cur = { value: arg.value, version: `v${++n}` };
        return { type: 'ok', result: { won: true, value: cur.value, version: cur.version } };
      }
      if (arg.ifNotExists && cur !== null) return { type: 'fail', result: null, error: 'key_already_exists' };
      if (arg.ifVersion !== undefined && cur?.version !== arg.ifVersion)
        return { type: 'fail', result: null, error: 'version_mismatch' };
      if (f === 'delete') {
        if (cur === null) return { type: 'fail', result: null, error: 'key_not_found' };
        cur = null;
        return { type: 'ok', result: { existed: true } };
      }
      cur = { value: arg.value, version: `v${++n}` };
      return { type: 'ok', result: { version: cur.version } };
    },
  };
}

/** A lock as coord applies it; `expire` frees it (a TTL running out). */
function lockSystem(rnd: Random): Sys {
  let holder: { owner: string; fence: number } | null = null;
  let last = 0;
  return {
    apply(_p, f, arg) {
      if (holder !== null && rnd.chance(0.15)) holder = null; // ran out
      const fence = arg.fence as number;
      switch (f) {
        case 'acquire':
          if (holder !== null) return { type: 'fail', result: null, error: 'lock_held' };
          last += rnd.int(1, 3);
          holder = { owner: arg.owner as string, fence: last };
          return { type: 'ok', result: { fence: last } };
        case 'renew':
          if (fence < last) return { type: 'fail', result: null, error: 'fence_stale' };
          if (holder === null || holder.owner !== arg.owner || holder.fence !== fence)
            return { type: 'fail', result: null, error: 'lease_lost' };
          return { type: 'ok', result: { fence } };
        case 'release':
          if (holder === null || holder.owner !== arg.owner || holder.fence !== fence)
            return { type: 'ok', result: { released: false } };
          holder = null;
          return { type: 'ok', result: { released: true } };
        case 'write':
          return fence < last
            ? { type: 'fail', result: null, error: 'fence_stale' }
            : { type: 'ok', result: { version: 'w' } };
        default:
          return { type: 'ok', result: holder === null ? null : { owner: holder.owner, fence: holder.fence } };
      }
    },
  };
}

function entryCall(rnd: Random, seen: string[], next: () => number): [string, Record<string, unknown>] {
  const r = rnd.next();
  if (r < 0.3) return ['get', {}];
  if (r < 0.45) return ['claim', { value: next() }];
  if (r < 0.6) return ['delete', rnd.chance(0.5) && seen.length ? { ifVersion: rnd.pick(seen) } : {}];
  const cond = rnd.chance(0.3)
    ? { ifNotExists: true }
    : rnd.chance(0.4) && seen.length
      ? { ifVersion: rnd.pick(seen) }
      : {};
  return ['set', { value: next(), ...cond }];
}

function lockCall(
  rnd: Random,
  grants: Array<{ owner: string; fence: number }>,
  next: () => number,
): [string, Record<string, unknown>] {
  const r = rnd.next();
  const g = grants.length > 0 ? rnd.pick(grants) : { owner: 'nobody', fence: 1 };
  if (r < 0.35) return ['acquire', { owner: `o${next()}` }];
  if (r < 0.5) return ['renew', { ...g }];
  if (r < 0.65) return ['release', { ...g }];
  if (r < 0.85) return ['write', { fence: g.fence, owner: g.owner }];
  return ['get', {}];
}

/** The refusals each call can get (a claim is never refused; a release answers `released: false`). */
const REFUSALS: Record<string, string[]> = {
  set: ['key_already_exists', 'version_mismatch'],
  delete: ['key_not_found', 'version_mismatch'],
  acquire: ['lock_held'],
  renew: ['fence_stale', 'lease_lost'],
  write: ['fence_stale'],
};

/** A random concurrent history of `sys`: every call takes effect between its invocation and its reply (or never, for some lost replies). */
function history(rnd: Random, kind: 'entry' | 'lock'): Recorder {
  const rec = new Recorder();
  const sys = kind === 'entry' ? entrySystem() : lockSystem(rnd);
  const seen: string[] = [];
  const grants: Array<{ owner: string; fence: number }> = [];
  let counter = 0;
  const next = () => ++counter;
  const procs = Array.from({ length: rnd.int(2, 4) }, () => ({
    id: rec.newProcess(),
    op: undefined as Op | undefined,
    done: undefined as ReturnType<Sys['apply']> | undefined,
  }));
  let calls = rnd.int(3, 9);
  const mutate = rnd.chance(0.35);
  while (calls > 0 || procs.some((p) => p.op)) {
    const p = rnd.pick(procs);
    if (p.op === undefined) {
      if (calls-- <= 0) continue;
      const [f, arg] = kind === 'entry' ? entryCall(rnd, seen, next) : lockCall(rnd, grants, next);
      p.op = rec.invoke(kind, p.id, f, 'k', arg as never, 'n1');
      p.done = undefined;
    } else if (p.done === undefined && rnd.chance(0.6)) {
      p.done = sys.apply(p.id, p.op.f, p.op.value as Record<string, unknown>);
      const r = p.done.result as Record<string, unknown> | null;
      if (r && typeof r.version === 'string') seen.push(r.version);
      if (p.op.f === 'acquire' && p.done.type === 'ok')
        grants.push({ owner: (p.op.value as { owner: string }).owner, fence: (r as { fence: number }).fence });
    } else {
      const lost = rnd.chance(0.12);
      if (lost || p.done === undefined) {
        // A lost reply: the call took effect (if it was applied) or not; nobody knows.
        rec.complete(p.op, 'info', null, 'client-timeout');
        p.id = rec.newProcess();
      } else rec.complete(p.op, p.done.type, p.done.result as never, p.done.error);
      p.op = undefined;
    }
  }
  if (mutate && rnd.chance(0.4)) {
    // An answer turned into a refusal the model must judge (one Parley can give for that call).
    const done = rec.ops.filter((o) => o.type === 'ok' && REFUSALS[o.f] !== undefined);
    if (done.length > 0) {
      const o = rnd.pick(done);
      o.type = 'fail';
      o.result = null as never;
      o.error = rnd.pick(REFUSALS[o.f] as string[]);
    }
  } else if (mutate) {
    const oks = rec.ops.filter((o) => o.type === 'ok' && o.result !== null && typeof o.result === 'object');
    if (oks.length > 0) {
      const o = rnd.pick(oks);
      const r = { ...(o.result as Record<string, unknown>) };
      for (const k of ['value', 'fence', 'version', 'won', 'released', 'owner']) {
        if (k in r) {
          r[k] =
            typeof r[k] === 'number' ? (r[k] as number) + 1 : typeof r[k] === 'boolean' ? !r[k] : `${String(r[k])}x`;
          break;
        }
      }
      o.result = r as never;
    }
  }
  return rec;
}

describe('the independent checker agrees with parley-check', () => {
  for (const kind of ['entry', 'lock'] as const) {
    it(`on 1500 random ${kind} histories (both verdicts)`, () => {
      const rnd = new Random(20261201 + (kind === 'lock' ? 1 : 0));
      const model = (kind === 'entry' ? parleyEntryModel : parleyLockModel) as unknown as Model;
      const verdicts = { linearizable: 0, 'not linearizable': 0 };
      for (let i = 0; i < 1500; i++) {
        const rec = history(rnd, kind);
        const theirs = checkLinearizability(model, rec.events(kind, untimed), { maxSteps: 1_000_000 }).verdict;
        const mine = checkOwn(rec, kind === 'entry' ? 'register' : 'lock', kind).verdict;
        if (theirs !== mine) {
          const lines = rec.ops.map(
            (o) =>
              `${o.process} ${o.f} ${JSON.stringify(o.value)} -> ${o.type} ${JSON.stringify(o.result)} ${o.error ?? ''}`,
          );
          expect.fail(`history ${i}: parley-check ${theirs}, own ${mine}\n${lines.join('\n')}`);
        }
        if (mine === 'linearizable' || mine === 'not linearizable') verdicts[mine]++;
      }
      expect(verdicts.linearizable).toBeGreaterThan(300);
      expect(verdicts['not linearizable']).toBeGreaterThan(100);
    });
  }
});
