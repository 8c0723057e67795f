import { describe, expect, it } from 'vitest';
import { jsonDepthExceeds } from './json.js';

function nest(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
}

describe('jsonDepthExceeds', () => {
  it('counts a top-level container as level 1 and scalars as level 0', () => {
    expect(jsonDepthExceeds(1, 0)).toBe(false);
    expect(jsonDepthExceeds(null, 0)).toBe(false);
    expect(jsonDepthExceeds([], 0)).toBe(true);
    expect(jsonDepthExceeds([], 1)).toBe(false);
    expect(jsonDepthExceeds(nest(64), 64)).toBe(false);
    expect(jsonDepthExceeds(nest(65), 64)).toBe(true);
    expect(jsonDepthExceeds({ a: [1, { b: [] }], c: 2 }, 3)).toBe(true);
    expect(jsonDepthExceeds({ a: [1, { b: 2 }], c: [] }, 3)).toBe(false);
  });

  it('walks a 200,000-deep value without overflowing the stack', () => {
    const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`);
    expect(jsonDepthExceeds(deep, 64)).toBe(true);
    expect(jsonDepthExceeds(deep, 300_000)).toBe(false);
  });
});
