/**
 * A member whose Raft log refuses a save leaves the group's service visibly:
 * it steps down (names no leader, itself least of all), strong calls through
 * it fail at once with the fault's code instead of waiting out their
 * timeout, it says so in the log and as a `storage:fault` event, and the
 * others elect a leader among themselves and keep serving.
 */
import { type RaftLogStorage, type RaftLogUpdate, StorageFullError } from '@parley/interface';
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
    const other = others[0] as TestMember;
    await expect(other.module.strong('ns').set('after', 2)).resolves.toMatchObject({ value: 2 });
    expect((await other.module.strong('ns').get('before'))?.value).toBe(1);
    expect(others.some((m) => m.module.replica.isLeader())).toBe(true);
    expect(leader.module.replica.isLeader()).toBe(false);
  });
});
