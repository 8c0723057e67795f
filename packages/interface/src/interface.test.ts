import { describe, expect, it } from 'vitest';
import {
  Emitter,
  ERROR_STATUS,
  FenceStaleError,
  isParleyError,
  NotLeaderError,
  ParleyError,
  SeededRandom,
  testSeed,
  VersionMismatchError,
  withSeed,
} from './index.js';

describe('SeededRandom', () => {
  it('replays the same sequence for the same seed and differs across seeds', () => {
    const a = new SeededRandom(7);
    const b = new SeededRandom(7);
    const c = new SeededRandom(8);
    const seqA = Array.from({ length: 50 }, () => a.nextU32());
    expect(Array.from({ length: 50 }, () => b.nextU32())).toEqual(seqA);
    expect(Array.from({ length: 50 }, () => c.nextU32())).not.toEqual(seqA);
  });

  it('separates seeds that differ only above 2^32', () => {
    expect(new SeededRandom(2 ** 33).nextU32()).not.toBe(new SeededRandom(0).nextU32());
  });

  it('draws integers within bounds and roughly uniformly', () => {
    const r = new SeededRandom(1);
    const counts = new Array(6).fill(0);
    for (let i = 0; i < 60_000; i++) counts[r.int(6)]++;
    for (const n of counts) expect(n).toBeGreaterThan(9_000);
    expect(() => r.int(0)).toThrow(RangeError);
  });

  it('forks into an independent but reproducible stream', () => {
    const f1 = new SeededRandom(3).fork();
    const f2 = new SeededRandom(3).fork();
    expect(f1.nextU32()).toBe(f2.nextU32());
  });
});

describe('errors', () => {
  it('carry a stable code, the HTTP status from the one table, and JSON', () => {
    const err = new VersionMismatchError('cfg', 'v1', 'v2');
    expect(err.code).toBe('version_mismatch');
    expect(err.status).toBe(409);
    expect(err.message).toContain('v1');
    expect(err.message).toContain('v2');
    expect(err.name).toBe('VersionMismatchError');
    expect(err).toBeInstanceOf(ParleyError);
    expect(err.toJSON().details).toEqual({ key: 'cfg', expected: 'v1', actual: 'v2' });
    expect(new FenceStaleError('l', 1, 2).status).toBe(ERROR_STATUS.fence_stale);
  });

  it('marks not_leader as retryable with a hint', () => {
    const err = new NotLeaderError('peer-b');
    expect(err.retryable).toBe(true);
    expect(err.status).toBe(503);
    expect(isParleyError(err, 'not_leader')).toBe(true);
    expect(isParleyError(err, 'timeout')).toBe(false);
    expect(isParleyError(new Error('x'))).toBe(false);
  });
});

describe('Emitter', () => {
  it('delivers typed payloads, survives a throwing listener and unsubscribes', () => {
    const seen: string[] = [];
    const errors: unknown[] = [];
    const e = new Emitter<{ connect: string }>((err) => errors.push(err));
    e.on('connect', () => {
      throw new Error('boom');
    });
    const off = e.on('connect', (p) => seen.push(p));
    e.emit('connect', 'a');
    off();
    e.emit('connect', 'b');
    expect(seen).toEqual(['a']);
    expect(errors).toHaveLength(2);
  });
});

describe('withSeed', () => {
  it('names the seed in a failure, synchronous or async, and passes results through', async () => {
    expect(withSeed(7, (s) => s + 1)).toBe(8);
    expect(() =>
      withSeed(7, () => {
        throw new Error('boom');
      }),
    ).toThrow('PARLEY_SEED=7: boom');
    await expect(withSeed(9, async () => Promise.reject(new Error('late')))).rejects.toThrow('PARLEY_SEED=9: late');
    expect(testSeed(42)).toBe(process.env.PARLEY_SEED ? Number(process.env.PARLEY_SEED) : 42);
  });
});
