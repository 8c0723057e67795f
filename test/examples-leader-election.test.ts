/**
 * examples/leader-election: three replica processes, one fenced lock; the paused
 * leader's late write is refused, and the accepted runs never go back to an older fence.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../examples/leader-election/election.mjs';

describe('examples/leader-election', () => {
  it('accepts one leader at a time and refuses a paused old leader’s write', async () => {
    const r = await run({ replicas: 3, ttl: 2, everyMs: 200, timeoutMs: 40_000 });
    expect(r.paused?.phase).toBe('refused');
    const refused = r.events.find((e: { event: string; replica: string }) => e.event === 'refused');
    expect(refused).toMatchObject({ replica: r.paused?.name, fence: r.paused?.fence, code: 'fence_stale' });
    // In log order, accepted runs carry non-decreasing fences, each fence one replica's.
    const ownerOf = new Map<number, string>();
    let last = 0;
    for (const a of r.accepted as Array<{ by: string; fence: number }>) {
      expect(a.fence).toBeGreaterThanOrEqual(last);
      last = a.fence;
      expect(ownerOf.get(a.fence) ?? a.by).toBe(a.by);
      ownerOf.set(a.fence, a.by);
    }
    expect(ownerOf.size).toBeGreaterThanOrEqual(2);
    const newest = Math.max(...ownerOf.keys());
    expect(newest).toBeGreaterThan(r.paused?.fence ?? 0);
  }, 60_000);
});
