import { FenceStaleError, isParleyError, KeyAlreadyExistsError, VersionMismatchError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import type { StrongChange } from '../api.js';
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
  it('set, get, CAS, create-only, delete and list', async () => {
    const s = await lone();
    const jobs = s.strong('jobs');
    const created = await jobs.set('cfg', { pct: 25 }, { ttl: 600 });
    expect(created.operation).toBe('created');
    expect(created.entry).toMatchObject({ namespace: 'jobs', key: 'cfg', value: { pct: 25 }, ttlSeconds: 600 });
    expect((await jobs.get('cfg'))?.version).toBe(created.entry.version);

    const updated = await jobs.set('cfg', { pct: 50 }, { ifVersion: created.entry.version });
    expect(updated.operation).toBe('updated');
    expect(updated.entry.version).not.toBe(created.entry.version);
    await expect(jobs.set('cfg', { pct: 75 }, { ifVersion: created.entry.version })).rejects.toBeInstanceOf(
      VersionMismatchError,
    );
    expect((await jobs.get('cfg'))?.value).toEqual({ pct: 50 });

    await expect(jobs.set('cfg', 1, { ifNotExists: true })).rejects.toBeInstanceOf(KeyAlreadyExistsError);
    await jobs.set('other', 2, { ifNotExists: true });
    const page = await jobs.list({ sortBy: 'key' });
    expect(page.items.map((e) => e.key)).toEqual(['cfg', 'other']);
    expect(page.nextCursor).toBeNull();

    expect(await jobs.delete('other')).toBe(true);
    expect(await jobs.delete('other')).toBe(false);
    expect(await jobs.get('other')).toBeUndefined();
    const gone = await jobs.deleteNamespace({ confirm: true });
    expect(gone.deleted_count).toBe(1);
    expect((await jobs.list()).items).toEqual([]);
  });

  it('claims have one winner and tell losers the winner', async () => {
    const s = await lone();
    const ns = s.strong('dispatch');
    const [a, b] = await Promise.all([ns.claim('etl', { run: 'a' }), ns.claim('etl', { run: 'b' })]);
    const winners = [a, b].filter((r) => r.won);
    expect(winners).toHaveLength(1);
    const loser = a.won ? b : a;
    expect(loser.value).toEqual(winners[0]?.value);
    expect(loser.version).toBe(winners[0]?.version);
  });

  it('leases: epoch, renew, fenced state writes, release, attach', async () => {
    const s = await lone();
    const ns = s.strong('state');
    const lease = await ns.lease('etl/run', { ttl: 60, holder: 'w1', state: { step: 0 } });
    expect(lease.epoch).toBeGreaterThan(0);
    await expect(ns.lease('etl/run', { ttl: 60, holder: 'w2' })).rejects.toSatisfy((e) =>
      isParleyError(e, 'lock_held'),
    );
    const renewed = await lease.renew(120);
    expect(renewed.deadlineAt).toBeGreaterThan(lease.view.deadlineAt - 1);
    const written = await lease.updateState({ step: 1 });
    expect(written.state).toEqual({ step: 1 });
    const attached = await ns.attach('etl/run', 'w1');
    expect(attached?.epoch).toBe(lease.epoch);
    expect(await ns.attach('etl/run', 'w2')).toBeUndefined();
    await lease.release({ step: 2 });
    await expect(lease.updateState({ step: 3 })).rejects.toSatisfy((e) => isParleyError(e, 'lease_lost'));
    const next = await ns.lease('etl/run', { ttl: 60, holder: 'w2' });
    expect(next.epoch).toBeGreaterThan(lease.epoch);
    expect(next.view.state).toEqual({ step: 2 });
  });

  it('locks: FIFO blocking waits, renew, release, inspect, fenced writes', async () => {
    const s = await lone();
    const locks = s.locks('deploy');
    const ns = s.strong('deploy-state');
    const first = await locks.acquire('rollout', { owner: 'a', ttl: 30, metadata: { why: 'test' } });
    expect(first.fence).toBeGreaterThan(0);
    await expect(locks.acquire('rollout', { owner: 'b' })).rejects.toSatisfy((e) => isParleyError(e, 'lock_held'));
    await ns.set('k', 1, { fence: first });
    const waiting = locks.acquire('rollout', { owner: 'b', ttl: 30, wait: 5 });
    const info = await locks.inspect('rollout');
    expect(info.holder?.owner).toBe('a');
    await locks.renew('rollout', { owner: 'a', fence: first.fence, ttl: 60 });
    expect(await locks.release('rollout', { owner: 'a', fence: first.fence })).toBe(true);
    const second = await waiting;
    expect(second.owner).toBe('b');
    expect(second.fence).toBeGreaterThan(first.fence);
    await expect(ns.set('k', 2, { fence: first })).rejects.toBeInstanceOf(FenceStaleError);
    await ns.set('k', 3, { fence: second });
    expect((await ns.get('k'))?.value).toBe(3);
    // A retried release of the old grant never frees the new holder.
    expect(await locks.release('rollout', { owner: 'a', fence: first.fence })).toBe(false);
    expect((await locks.inspect('rollout')).holder?.owner).toBe('b');
  });

  it('doc(key).update is an atomic read-modify-write under concurrency', async () => {
    const s = await lone();
    const ns = s.strong('metrics');
    const d = ns.doc<{ runs: number }>('daily');
    await Promise.all(
      Array.from({ length: 8 }, () => d.update((c) => ({ runs: c.runs + 1 }), { create: { runs: 0 } })),
    );
    expect((await ns.get('daily'))?.value).toEqual({ runs: 8 });
    const entry = await d.update((c) => ({ runs: c.runs * 10 }));
    expect(entry.value).toEqual({ runs: 80 });
  });

  it('watch reports changes with revisions and resumes after a revision', async () => {
    const s = await lone();
    const ns = s.strong('w');
    const seen: StrongChange[] = [];
    const stop = ns.watch({ prefix: 'a' }, (c) => seen.push(c));
    await ns.set('a1', 1);
    await ns.set('b1', 1);
    await ns.set('a2', 2);
    await ns.delete('a1');
    stop();
    await ns.set('a3', 3);
    expect(seen.map((c) => [c.type, c.key])).toEqual([
      ['set', 'a1'],
      ['set', 'a2'],
      ['delete', 'a1'],
    ]);
    expect(seen[0]?.revision).toBeLessThan(seen[1]?.revision as number);
    const replay: StrongChange[] = [];
    const stop2 = ns.watch({ fromRevision: seen[1]?.revision }, (c) => replay.push(c));
    stop2();
    expect(replay.map((c) => c.key)).toEqual(['a1', 'a3']);
  });

  it('watch from a revision no longer kept fails with compacted', async () => {
    const s = await lone({ maxWatchHistory: 2 });
    const ns = s.strong('w');
    const first = await ns.set('a', 1);
    for (let i = 0; i < 4; i++) await ns.set('a', i);
    expect(() => ns.watch({ fromRevision: 0 }, () => {})).toThrow(expect.objectContaining({ code: 'compacted' }));
    expect(first.entry.version).toBeTruthy();
  });

  it('calls beyond the session slots and the bounded queue fail at once with unavailable', async () => {
    const s = await lone({ maxSessions: 1, maxQueuedCalls: 1 });
    const ns = s.strong('q');
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => ns.set(`k${i}`, i)));
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) expect(isParleyError((o as PromiseRejectedResult).reason, 'unavailable')).toBe(true);
    expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBeGreaterThanOrEqual(2);
  });

  it('cluster status of a lone node', async () => {
    const s = await lone();
    await s.strong('x').set('k', 1);
    const st = await s.cluster.status();
    expect(st).toMatchObject({ self: 'solo', leader: 'solo', voters: ['solo'], learners: [] });
    expect(st.appliedIndex).toBeGreaterThan(0);
    expect(st.commitIndex).toBeGreaterThanOrEqual(st.appliedIndex);
  });

  it('typed errors for bad input, nothing written', async () => {
    const s = await lone();
    const ns = s.strong('bad');
    await expect(ns.set('k', 1, { ttl: -1 })).rejects.toSatisfy((e) => isParleyError(e, 'invalid_argument'));
    await expect(ns.set('k', 'x'.repeat(1_100_000))).rejects.toSatisfy((e) => isParleyError(e, 'value_too_large'));
    expect(await ns.get('k')).toBeUndefined();
  });
});
