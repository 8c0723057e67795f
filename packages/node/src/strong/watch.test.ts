/**
 * Watches never skip a change without saying so: the change log's resume
 * points inside a revision, a node outside the group polling pages smaller
 * than one deleteNamespace, a resume point gone (`compacted`, not the head),
 * and a member caught up by InstallSnapshot. The property over every path,
 * under faults, is the simulator's `watch-strong-*` scenarios.
 */
import type { ParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import type { StrongChange } from '../api.js';
import { ChangeLog } from './changes.js';
import { FAST, MemoryGroup } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

async function three(options = {}) {
  group = new MemoryGroup(VOTERS, { ...FAST, ...options });
  for (const id of VOTERS) await group.start(id);
  await group.waitForLeader();
  return group;
}

const change = (revision: number, key: string): StrongChange => ({ namespace: 'n', key, type: 'delete', revision });
const keys = (cs: StrongChange[]) => cs.map((c) => `${c.revision}:${c.key}`);

describe('the change log', () => {
  it('resumes inside a revision, and drops a revision whole from what it can replay', () => {
    const log = new ChangeLog(4);
    for (const k of ['a', 'b', 'c']) log.push(change(7, k));
    log.push(change(9, 'd'));
    expect(keys(log.since(6, { namespace: 'n' }, 10, 2))).toEqual(['7:c', '9:d']);
    expect(keys(log.since(6, { namespace: 'n' }, 2, 1))).toEqual(['7:b', '7:c']);
    expect(keys(log.since(7, { namespace: 'n' }, 10, 5))).toEqual(['9:d']); // skip counts only revision 8
    log.push(change(10, 'e')); // 5 kept: within the trimming slack
    log.push(change(10, 'f')); // trimmed to 4: revision 7 lost its first two changes
    expect(log.oldestRevision).toBe(7);
    expect(() => log.since(6, { namespace: 'n' }, 10)).toThrow(expect.objectContaining({ code: 'compacted' }));
    expect(keys(log.since(7, { namespace: 'n' }, 10))).toEqual(['9:d', '10:e', '10:f']);
  });

  it('tells its followers when a snapshot replaced the state', () => {
    const log = new ChangeLog(10);
    const gaps: number[] = [];
    const seen: string[] = [];
    const stop = log.subscribe(
      (c) => seen.push(c.key),
      (r) => gaps.push(r),
    );
    log.push(change(3, 'a'));
    log.resetTo(12);
    stop();
    log.resetTo(20);
    expect(gaps).toEqual([12]);
    expect(seen).toEqual(['a']);
    expect(log.oldestRevision).toBe(20);
  });
});

describe('strong watches', () => {
  it('a command appended twice (a retry) is one change: the second changes nothing', async () => {
    group = new MemoryGroup(['solo'], FAST);
    const { replica, strong } = (await group.start('solo')).module;
    const seen: StrongChange[] = [];
    const stop = strong('dup').watch({}, (c) => seen.push(c));
    const session = await replica.submit({ op: { type: 'register_session' } }).promise;
    if (!session.ok || session.value.type !== 'session') throw new Error('no session');
    const { clientId } = session.value;
    const once = { clientId, seq: 1, op: { type: 'set', namespace: 'dup', key: 'k', value: 'first' } } as const;
    await replica.submit(once).promise;
    await strong('dup').set('k', 'second');
    const again = await replica.submit(once).promise; // answered from the session table
    expect(again.ok && again.value.type === 'entry' && again.value.entry.value).toBe('first');
    await strong('dup').set('z', 'last');
    stop();
    expect(seen.map((c) => `${c.key}=${JSON.stringify(c.entry?.value)}`)).toEqual([
      'k="first"',
      'k="second"',
      'z="last"',
    ]);
  });

  it('outside the group: every change of a revision larger than a page, once, in order', async () => {
    const g = await three({ watchPageChanges: 3 });
    const outsider = await g.start('client', {});
    const ns = g.member('v1').module.strong('big');
    for (let i = 0; i < 10; i++) await ns.set(`k${i}`, i);
    const from = g.member('v1').module.replica.appliedThrough;
    const seen: StrongChange[] = [];
    const stop = outsider.module.strong('big').watch({ fromRevision: from }, (c) => seen.push(c));
    await ns.deleteNamespace({ confirm: true });
    await ns.set('after', 1);
    await waitFor(() => seen.length >= 11, 5_000, 'eleven changes');
    stop();
    expect(seen.map((c) => `${c.type}:${c.key}`)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `delete:k${i}`),
      'set:after',
    ]);
    expect(new Set(seen.slice(0, 10).map((c) => c.revision)).size).toBe(1);
  });

  it('outside the group: a resume point no longer kept ends the watch with compacted, not at the head', async () => {
    const g = await three({ maxWatchHistory: 4 });
    const outsider = await g.start('client', {});
    const ns = g.member('v1').module.strong('old');
    for (let i = 0; i < 12; i++) await ns.set('k', i);
    const seen: StrongChange[] = [];
    let ended: ParleyError | undefined;
    outsider.module.strong('old').watch({ fromRevision: 1, onError: (err) => (ended = err) }, (c) => seen.push(c));
    await waitFor(() => ended !== undefined, 5_000, 'the watch to end');
    await ns.set('k', 'later');
    await new Promise((r) => setTimeout(r, 600)); // two poll periods: nothing more may arrive
    expect(ended?.code).toBe('compacted');
    expect(seen).toEqual([]);
  });

  it('on a member caught up by InstallSnapshot: what the snapshot covered is delivered, in order', async () => {
    const g = await three({ snapshotEveryEntries: 5, keepEntries: 1 });
    const leader = await g.waitForLeader();
    const lagging = VOTERS.find((v) => v !== leader.id) as string;
    const ns = leader.module.strong('snap');
    await ns.set('k', -1);
    await waitFor(
      () => g.member(lagging).module.replica.appliedThrough >= leader.module.replica.appliedThrough,
      5_000,
      'the follower to catch up',
    );
    const seen: StrongChange[] = [];
    let ended: ParleyError | undefined;
    const stop = g
      .member(lagging)
      .module.strong('snap')
      .watch({ onError: (err) => (ended = err) }, (c) => seen.push(c));
    g.network.partition(
      [lagging],
      VOTERS.filter((v) => v !== lagging),
    );
    for (let i = 0; i < 20; i++) await ns.set('k', i);
    const restoredBefore = g.member(lagging).module.replica.snapshotsRestored;
    g.network.heal();
    await waitFor(() => seen.length >= 20 || ended !== undefined, 10_000, 'twenty changes');
    stop();
    expect(ended).toBeUndefined();
    expect(g.member(lagging).module.replica.snapshotsRestored).toBeGreaterThan(restoredBefore);
    expect(seen.map((c) => c.entry?.value)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
