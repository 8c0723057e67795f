import { describe, expect, it } from 'vitest';
import { formatTable, jsonPathFromArgs, quantile, toResult } from './index.js';

describe('bench helper', () => {
  it('computes the ratio against the anchor, and none without one', () => {
    expect(toResult({ name: 'set', unit: 'ops/s', value: 300, anchor: 'yjs', anchorValue: 150 }).ratio).toBe(2);
    expect(toResult({ name: 'x', unit: 'ms', value: 3 })).toEqual({
      name: 'x',
      unit: 'ms',
      value: 3,
      anchor: null,
      anchorValue: null,
      ratio: null,
    });
  });

  it('reads --json in both spellings', () => {
    expect(jsonPathFromArgs(['--json', 'out.json'])).toBe('out.json');
    expect(jsonPathFromArgs(['--json=o.json'])).toBe('o.json');
    expect(jsonPathFromArgs([])).toBeUndefined();
  });

  it('prints one aligned row per result', () => {
    const table = formatTable('t', [
      toResult({ name: 'get', unit: 'ops/s', value: 1234567, anchor: 'yjs', anchorValue: 1000000 }),
    ]);
    expect(table).toContain('1,234,567');
    expect(table).toContain('1.23×');
    expect(table.split('\n')).toHaveLength(4);
  });

  it('takes nearest-rank quantiles', () => {
    const s = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(s, 0.5)).toBe(50);
    expect(quantile(s, 0.99)).toBe(99);
  });
});
