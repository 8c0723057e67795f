/**
 * Raft-specific behaviour of a group of one (bounded watch history, session
 * slots, cluster status). What every strong backend must do is in the shared
 * conformance suite (packages/conformance).
 */
import { isParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST, MemoryGroup } from './testing.js';

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

async function lone(options = {}) {
  group = new MemoryGroup(['solo'], { ...FAST, ...options });
  const m = await group.start('solo');
  return m.module;
}

describe('strong module, a group of one', () => {
  it('watch from a revision no longer kept fails with compacted', async () => {
    const s = await lone({ maxWatchHistory: 2 });
    const ns = s.strong('w');
    const first = await ns.set('a', 1);
    for (let i = 0; i < 4; i++) await ns.set('a', i);
    expect(() => ns.watch({ fromRevision: 0 }, () => {})).toThrow(expect.objectContaining({ code: 'compacted' }));
    expect(first.version).toBeTruthy();
  });

  it('calls beyond the session slots and the bounded queue fail at once with unavailable', async () => {
    const s = await lone({ maxSessions: 1, maxQueuedCalls: 1 });
    const ns = s.strong('q');
    // One session's window (32) and one queued call; the rest are refused.
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => ns.set(`k${i}`, i)));
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).toHaveLength(7);
    for (const o of refused) expect(isParleyError((o as PromiseRejectedResult).reason, 'unavailable')).toBe(true);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(33);
  });

  it('cluster status of a lone node', async () => {
    const s = await lone();
    await s.strong('x').set('k', 1);
    const st = await s.cluster.status();
    expect(st).toMatchObject({ self: 'solo', leader: 'solo', voters: ['solo'], learners: [] });
    expect(st.appliedIndex).toBeGreaterThan(0);
    expect(st.commitIndex).toBeGreaterThanOrEqual(st.appliedIndex);
  });
});
