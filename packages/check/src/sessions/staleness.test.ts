import { describe, expect, it } from 'vitest';
import type { SessionOp } from './history.js';
import { checkBoundedStaleness } from './staleness.js';

type Op = SessionOp<number>;
const compare = (a: number, b: number) => a - b;
const write = (
  id: string,
  version: number,
  invokeMs: number,
  completeMs: number,
  outcome: 'ok' | 'unknown' = 'ok',
): Op => ({
  kind: 'write',
  session: 'writer',
  key: 'x',
  id,
  version,
  outcome,
  invokeMs,
  completeMs,
});
const read = (saw: string | null, invokeMs: number, bound?: number): Op & { bound?: number } => ({
  kind: 'read',
  session: 'reader',
  key: 'x',
  saw,
  outcome: 'ok',
  invokeMs,
  completeMs: invokeMs + 1,
  ...(bound === undefined ? {} : { bound }),
});
const check = (ops: Op[]) => checkBoundedStaleness(ops, { compare, boundOf: (r) => (r as { bound?: number }).bound });

describe('bounded staleness', () => {
  it('a read may miss a write acknowledged less than the bound before it', () => {
    expect(check([write('x1', 1, 0, 10), read(null, 500, 1000)]).ok).toBe(true);
    expect(check([write('x1', 1, 0, 10), write('x2', 2, 20, 30), read('x1', 1020, 1000)]).ok).toBe(true);
  });

  it('a read that misses a write acknowledged longer than the bound before it is a violation', () => {
    const r = check([write('x1', 1, 0, 10), write('x2', 2, 20, 30), read('x1', 1100, 1000)]);
    expect(r.violations).toEqual([{ op: 2, key: 'x', saw: 'x1', missed: 'x2', staleByMs: 1070, boundMs: 1000 }]);
    expect(check([write('x1', 1, 0, 10), read(null, 2000, 1000)]).ok).toBe(false);
  });

  it('reads without a bound, and ambiguous writes, promise nothing', () => {
    expect(check([write('x1', 1, 0, 10), read(null, 5000)]).ok).toBe(true);
    expect(check([write('x1', 1, 0, 10, 'unknown'), read(null, 5000, 1000)]).ok).toBe(true);
  });

  it('a newer version than the missed write is no violation', () => {
    expect(check([write('x1', 1, 0, 10), write('x2', 2, 20, 30), read('x2', 5000, 10)]).ok).toBe(true);
  });
});
