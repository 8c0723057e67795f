/**
 * examples/langgraph-takeover: one LangGraph.js thread, three worker processes on
 * one hub. worker-a is killed and worker-b resumes from its checkpoint; worker-b is
 * paused past its TTL and worker-c takes over; resumed, worker-b's late checkpoint
 * is refused by the store, and the thread's history is one chain. Uses dist/.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../../../examples/langgraph-takeover/takeover.mjs';

interface Step {
  id: string;
  parent: string | null;
  step: number | null;
  log: string[];
}

describe('examples/langgraph-takeover', () => {
  it('hands a thread over after a kill and a pause, and the chain never forks', async () => {
    const r = await run({ steps: 6, killAt: 2, pauseAt: 4, ttl: 2, timeoutMs: 150_000 });
    expect(r.phase).toMatchObject({ killed: true, paused: true, resumed: true, refused: true, done: true });
    const events = r.events as Array<{ worker: string; event: string; fence?: number; code?: string }>;
    const refused = events.find((e) => e.event === 'refused');
    expect(refused?.worker).toBe('worker-b');
    expect(['fence_stale', 'lease_lost']).toContain(refused?.code);
    const fence = (w: string) => events.find((e) => e.worker === w && e.event === 'owner')?.fence ?? 0;
    expect(fence('worker-a')).toBeLessThan(fence('worker-b'));
    expect(fence('worker-b')).toBeLessThan(fence('worker-c'));
    // One chain: newest first, each checkpoint's parent is the next one, the oldest has none.
    const history = r.history as Step[];
    expect(new Set(history.map((h) => h.id)).size).toBe(history.length);
    expect(history.map((h) => h.parent)).toEqual([...history.slice(1).map((h) => h.id), null]);
    expect(history.map((h) => h.step)).toEqual([6, 5, 4, 3, 2, 1, 0, null]);
    // Every step ran once in the thread's state, by owners in takeover order. (A step whose
    // checkpoint had not landed when its worker was stopped is run again by the next owner.)
    const by = (r.final as string[]).map((line, i) => {
      const m = /^step (\d+) by worker-([abc])$/.exec(line);
      expect(Number(m?.[1])).toBe(i + 1);
      return m?.[2] as string;
    });
    expect(by).toHaveLength(6);
    expect([...by].sort()).toEqual(by);
    expect(by[0]).toBe('a');
    expect(by[2]).toBe('b');
    expect(by.slice(4)).toEqual(['c', 'c']);
  }, 180_000);
});
