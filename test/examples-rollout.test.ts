/**
 * examples/rollout-flags (JS): six writers on two nodes, doc(key).update, no lost update.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../examples/rollout-flags/rollout.mjs';

describe('examples/rollout-flags', () => {
  it('counts every concurrent update', async () => {
    const r = await run({ writersPerNode: 3, steps: 8 });
    expect(r.expected).toBe(48);
    expect(r.final).toMatchObject({ pct: 48, updates: 48 });
  }, 30_000);
});
