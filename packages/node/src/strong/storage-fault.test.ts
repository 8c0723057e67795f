/**
 * A member whose Raft log refuses a save leaves the group's service visibly:
 * it steps down (names no leader, itself least of all), strong calls through
 * it fail at once with the fault's code instead of waiting out their
 * timeout, it says so in the log and as a `storage:fault` event, and the
 * others elect a leader among themselves and keep serving. Its watches end
 * with the fault's code (it will deliver nothing more) and new ones are refused.
 */
import { type ParleyError, type RaftLogStorage, type RaftLogUpdate, StorageFullError } from '@parley/interface';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { NodeEvents } from '../context.js';
import { FAST, MemoryGroup, type TestMember } from './testing.js';

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

/** Makes the member's Raft log refuse every save from now on, as a full disk does. */
function fillDisk(m: TestMember): void {
  const log = m.ctx.storage.raftLog as RaftLogStorage;
  log.save = async (_u: RaftLogUpdate) => {
    throw new StorageFullError('raft', 'No space left on device');
  };
}

describe('a member whose Raft log fails', () => {
  it('steps down, fails calls through it at once with the storage code, and the others go on', async () => {
    group = new MemoryGroup(['v1', 'v2', 'v3'], FAST, 7);
    for (const id of group.voters) await group.start(id);
    const leader = await group.waitForLeader();
    await leader.module.strong('ns').set('before', 1);
    const faults: Array<NodeEvents['storage:fault']> = [];
    leader.ctx.events.on('storage:fault', (f) => faults.push(f));
    const logged = vi.spyOn(leader.ctx.logger, 'error');
    fillDisk(leader);
    const started = Date.now();
    await expect(leader.module.strong('ns').set('during', 1)).rejects.toMatchObject({ code: 'storage_full' });
    expect(Date.now() - started).toBeLessThan(FAST.attemptTimeoutMs as number); // not a timeout
    expect(faults).toEqual([{ store: 'raft', code: 'storage_full' }]);
    expect(logged.mock.calls.some(([, msg]) => String(msg).startsWith('storage fault'))).toBe(true);
    logged.mockRestore();
    expect(leader.module.replica.isLeader()).toBe(false);
    expect(leader.module.replica.leaderHint()).toBeUndefined();
    expect((await leader.module.cluster.status()).leader).toBeNull();
    expect(leader.module.fault()).toMatchObject({ code: 'storage_full' });
    // Every later call through it fails at once too, reads included.
    const again = Date.now();
    await expect(leader.module.strong('ns').get('before')).rejects.toMatchObject({ code: 'storage_full' });
    await expect(leader.module.locks('l').acquire('x', { owner: 'o', ttl: 10 })).rejects.toMatchObject({
      code: 'storage_full',
    });
    expect(Date.now() - again).toBeLessThan(100);
    // The others elect a leader among themselves and serve.
    const others = [...group.members.values()].filter((m) => m !== leader);
    // A call before they agree on a new leader may fail fast with `unavailable` (nothing sent).
    const other = await group.waitForLeader(10_000, others);
    await expect(other.module.strong('ns').set('after', 2)).resolves.toMatchObject({ value: 2 });
    expect((await other.module.strong('ns').get('before'))?.value).toBe(1);
    expect(others.some((m) => m.module.replica.isLeader())).toBe(true);
    expect(leader.module.replica.isLeader()).toBe(false);
  });

  it('ends the watches on it with the storage code, and refuses new ones', async () => {
    group = new MemoryGroup(['v1', 'v2', 'v3'], FAST, 7);
    for (const id of group.voters) await group.start(id);
    const leader = await group.waitForLeader();
    const follower = [...group.members.values()].find((m) => m !== leader) as TestMember;
    const seen: string[] = [];
    const ended: ParleyError[] = [];
    follower.module.strong('ns').watch({ onError: (err) => ended.push(err) }, (c) => seen.push(c.key));
    await leader.module.strong('ns').set('before', 1);
    await waitFor(() => seen.includes('before'));
    fillDisk(follower);
    // The next entry the follower must save stops its driver; the others commit it without it.
    await leader.module.strong('ns').set('during', 1);
    await waitFor(() => ended.length > 0);
    expect(ended.map((e) => [e.code, e.status])).toEqual([['storage_full', 507]]);
    expect(seen).toEqual(['before']);
    expect(() => follower.module.strong('ns').watch({}, () => {})).toThrow(
      expect.objectContaining({ code: 'storage_full' }),
    );
  });
});

/** Resolves once `check()` holds (polled every 10 ms); fails after 5 s. */
async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5000 ms');
    await new Promise((r) => setTimeout(r, 10));
  }
}
