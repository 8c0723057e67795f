import { describe, expect, it } from 'vitest';
import { simulate } from '../testing.js';

describe('simulate', () => {
  it('runs user timers, Date and performance.now on simulated time, and records strong calls', async () => {
    const realSetTimeout = globalThis.setTimeout;
    const realDate = Date;
    const result = await simulate({ nodes: 5, voters: 3, seed: 7 }, async (cluster) => {
      const t0 = Date.now();
      const p0 = performance.now();
      const fired: number[] = [];
      setTimeout(() => fired.push(Date.now() - t0), 1_500);
      const id = setInterval(() => fired.push(Date.now() - t0), 1_000);
      await cluster.run('3500ms');
      clearInterval(id);
      expect(fired).toEqual([1_000, 1_500, 2_000, 3_000]);
      expect(Math.round(performance.now() - p0)).toBe(3_500);
      const ns = cluster.nodes[3]?.strong('jobs');
      let done = false;
      void (async () => {
        await ns?.set('a', 1);
        const e = await ns?.get('a');
        expect(e?.value).toBe(1);
        done = true;
      })();
      await cluster.runUntil(() => done, '10s');
      expect(done).toBe(true);
      cluster.expectLinearizable();
      cluster.expectFencing();
    });
    expect(globalThis.setTimeout).toBe(realSetTimeout);
    expect(Date).toBe(realDate);
    expect(result.history).toContain(`strong('jobs').set`);
  });

  it('restores the real timers when the test throws, and drops the user timers', async () => {
    const realSetTimeout = globalThis.setTimeout;
    let late = false;
    await expect(
      simulate({ nodes: 1, seed: 3 }, async () => {
        setTimeout(() => {
          late = true;
        }, 1);
        throw new Error('boom');
      }),
    ).rejects.toThrow(/boom\nPARLEY_SEED=3\nreplay: PARLEY_SEED=3 npx vitest run/);
    expect(globalThis.setTimeout).toBe(realSetTimeout);
    expect(Date.now()).toBeGreaterThan(Date.UTC(2026, 0, 1) + 86_400_000 * 300);
    await new Promise((r) => realSetTimeout(r, 20));
    expect(late).toBe(false);
  });
});
