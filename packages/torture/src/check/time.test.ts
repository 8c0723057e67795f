/** The time-aware checks on hand-made histories: each rule caught at its boundary, and quiet when it holds. */
import { describe, expect, it } from 'vitest';
import type { Op } from '../history.js';
import { catchUpWindows, checkEntryTimes, checkGrantTimes, checkReportedTimes } from './time.js';

let id = 0;
function op(
  f: string,
  value: unknown,
  invokeMs: number,
  completeMs: number,
  type: Op['type'],
  result: unknown = null,
  error?: string,
  extra?: Op['extra'],
): Op {
  const o: Op = {
    id: id++,
    workload: 'w',
    process: 0,
    f,
    key: 'k',
    value: value as never,
    node: 'n1',
    invokeMs,
    invokeWall: 1_000_000 + invokeMs,
  };
  o.type = type;
  o.result = result as never;
  if (error !== undefined) o.error = error;
  if (extra !== undefined) o.extra = extra;
  o.completeMs = completeMs;
  o.completeWall = 1_000_000 + completeMs;
  return o;
}
const lock = { holder: 'owner', token: 'fence' };

describe('mutual exclusion in real time', () => {
  it('flags a second grant inside the first one’s TTL − ε, and not one after it', () => {
    const g1 = op('acquire', { owner: 'a', ttlMs: 10_000 }, 0, 50, 'ok', { fence: 5 });
    const early = op('acquire', { owner: 'b', ttlMs: 10_000 }, 100, 9_700, 'ok', { fence: 9 });
    expect(checkGrantTimes('lock', [g1, early], lock, 200)).toHaveLength(1);
    const late = op('acquire', { owner: 'b', ttlMs: 10_000 }, 100, 9_800, 'ok', { fence: 9 });
    expect(checkGrantTimes('lock', [g1, late], lock, 200)).toEqual([]);
  });

  it('lets a release end the grant early, and a renewal extend it', () => {
    const g1 = op('acquire', { owner: 'a', ttlMs: 10_000 }, 0, 50, 'ok', { fence: 5 });
    const rel = op('release', { owner: 'a', fence: 5 }, 1_000, 1_100, 'ok', { released: true });
    const g2 = op('acquire', { owner: 'b', ttlMs: 10_000 }, 1_050, 1_200, 'ok', { fence: 9 });
    expect(checkGrantTimes('lock', [g1, rel, g2], lock, 200)).toEqual([]);
    const renew = op('renew', { owner: 'a', fence: 5, ttlMs: 10_000 }, 8_000, 8_100, 'ok', { fence: 5 });
    const g3 = op('acquire', { owner: 'c', ttlMs: 10_000 }, 12_000, 12_100, 'ok', { fence: 11 });
    expect(checkGrantTimes('lock', [g1, renew, g3], lock, 200).map((v) => v.check)).toEqual(['mutual exclusion']);
  });

  it('flags a read that finds the lock free, and a refusal of the holder, before the bound', () => {
    const g1 = op('acquire', { owner: 'a', ttlMs: 5_000 }, 0, 50, 'ok', { fence: 5 });
    const free = op('get', null, 1_000, 1_100, 'ok', null);
    const lost = op('renew', { owner: 'a', fence: 5, ttlMs: 5_000 }, 2_000, 2_100, 'fail', null, 'lease_lost');
    expect(checkGrantTimes('lock', [g1, free, lost], lock, 200)).toHaveLength(2);
  });
});

describe('TTL entries', () => {
  const w = op('create', { value: 'k-w', ttlMs: 10_000 }, 0, 100, 'ok', { version: 'v' });
  it('flags a read of nothing and a successful take before TTL − ε', () => {
    const gone = op('get', null, 200, 9_700, 'ok', null);
    const take = op('take', { value: 'x', ttlMs: 10_000 }, 300, 9_750, 'ok', { version: 'v2' });
    expect(checkEntryTimes('ttl', [w, gone, take], 200).violations.map((v) => v.check)).toEqual([
      'never early',
      'never early',
    ]);
    expect(checkEntryTimes('ttl', [w, op('get', null, 200, 9_850, 'ok', null)], 200).violations).toEqual([]);
  });
  it('flags the entry still there, or a take refused, after TTL + ε', () => {
    const there = op('get', null, 10_400, 10_450, 'ok', { value: 'k-w', version: 'v' });
    const refused = op('take', { value: 'x', ttlMs: 10_000 }, 10_500, 10_600, 'fail', null, 'key_already_exists');
    expect(checkEntryTimes('ttl', [w, there, refused], 200).violations.map((v) => v.check)).toEqual([
      'never extended',
      'never extended',
    ]);
    expect(
      checkEntryTimes('ttl', [w, op('get', null, 10_250, 10_300, 'ok', { value: 'k-w' })], 200).violations,
    ).toEqual([]);
    // Read during the catch-up after a leaderless stretch: excused; after it: not.
    const windows = catchUpWindows([op('set', {}, 0, 1_000, 'ok'), op('set', {}, 1_000, 9_000, 'ok')]);
    expect(windows).toEqual([[1_000, 9_000 + 4_000 + 2_000]]);
    expect(checkEntryTimes('ttl', [w, there], 200, windows)).toEqual({ violations: [], excused: 1 });
    const after = op('get', null, 15_100, 15_200, 'ok', { value: 'k-w', version: 'v' });
    expect(checkEntryTimes('ttl', [w, after], 200, windows).violations).toHaveLength(1);
  });
});

describe('reported times', () => {
  it('holds created_at and expires_at to the real time of the call, within ε', () => {
    const at = (ms: number) => new Date(1_000_000 + ms).toISOString();
    const good = op('create', { ttlMs: 10_000 }, 0, 100, 'ok', {}, undefined, {
      createdAt: at(50),
      expiresAt: at(10_050),
    });
    const stale = op('create', { ttlMs: 10_000 }, 0, 100, 'ok', {}, undefined, {
      createdAt: at(-20_000),
      expiresAt: at(-10_000),
    });
    expect(checkReportedTimes('ttl', [good], 200)).toEqual([]);
    expect(checkReportedTimes('ttl', [stale], 200)).toHaveLength(2);
  });
});
