import { InvalidArgumentError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { mergePn, NamespaceReplica, pnIncrement, pnValue } from './index.js';

const T0 = 1_750_000_000_000;

describe('PN-counter join and bounds', () => {
  it('a stale copy of a share never lowers the merged increments or decrements, in either order', () => {
    const old = pnIncrement(pnIncrement(new Map(), 'a', 3), 'a', -1); // a: inc 3, dec 1
    const now = pnIncrement(pnIncrement(old, 'a', 4), 'a', -2); // a: inc 7, dec 3
    expect(mergePn(now, old).get('a')).toEqual({ inc: 7, dec: 3 });
    expect(mergePn(old, now).get('a')).toEqual({ inc: 7, dec: 3 });
    expect(pnValue(mergePn(now, old))).toBe(4);
  });

  it('refuses a fractional or unsafe amount, and a share that would leave the safe integer range', () => {
    for (const by of [0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(() => pnIncrement(new Map(), 'a', by)).toThrow(InvalidArgumentError);
    }
    const full = pnIncrement(new Map(), 'a', Number.MAX_SAFE_INTEGER);
    expect(() => pnIncrement(full, 'a', 1)).toThrow(InvalidArgumentError);
    const empty = pnIncrement(new Map(), 'a', -Number.MAX_SAFE_INTEGER);
    expect(() => pnIncrement(empty, 'a', -1)).toThrow(InvalidArgumentError);
  });

  it('a namespace counter that would overflow is invalid_argument and keeps its value', () => {
    const r = new NamespaceReplica({ namespace: 'ns', replicaId: 'a' });
    r.increment('c', Number.MAX_SAFE_INTEGER, T0);
    expect(() => r.increment('c', 1, T0 + 1)).toThrow(InvalidArgumentError);
    expect(r.get('c', T0 + 2)?.value).toBe(Number.MAX_SAFE_INTEGER);
    r.increment('c', -1, T0 + 3);
    expect(r.get('c', T0 + 4)?.value).toBe(Number.MAX_SAFE_INTEGER - 1);
  });
});
