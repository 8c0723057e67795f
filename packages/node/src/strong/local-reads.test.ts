import { isParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST, MemoryGroup, type TestMember } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

async function three() {
  // Elections of 300–600 ms: a loaded machine does not move the leader under the test.
  group = new MemoryGroup(VOTERS, { ...FAST, electionTimeoutTicks: 30 });
  for (const id of VOTERS) await group.start(id);
  const leader = await group.waitForLeader();
  const followers = VOTERS.filter((v) => v !== leader.id).map((v) => group?.member(v) as TestMember);
  return { g: group, leader, followers };
}

/** Resolves once `check()` holds (polled every 10 ms). */
async function until(check: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('strong reads beside linearizable', () => {
  it('serializable: a follower answers from its state with no leader contact, even cut off', async () => {
    const { g, leader, followers } = await three();
    const f = followers[0] as TestMember;
    await leader.module.strong('r').set('k', 1);
    await until(() => f.module.replica.appliedThrough >= leader.module.replica.appliedThrough);
    expect((await f.module.strong('r').get('k', { consistency: 'serializable' }))?.value).toBe(1);
    // Cut off from everyone: a linearizable read cannot be answered, a serializable one is (stale).
    g.network.partition(
      [f.id],
      VOTERS.filter((v) => v !== f.id),
    );
    await leader.module.strong('r').set('k', 2);
    expect((await f.module.strong('r').get('k', { consistency: 'serializable' }))?.value).toBe(1);
    const page = await f.module.strong('r').list({ consistency: 'serializable' });
    expect(page.items.map((e) => e.value)).toEqual([1]);
    await expect(f.module.strong('r').get('k', { timeoutMs: 300 })).rejects.toSatisfy(
      (e) => isParleyError(e, 'timeout') || isParleyError(e, 'unavailable'),
    );
    expect(f.module.localReads.stats.serializable).toBe(3);
    expect(f.module.localReads.stats.pointsAsked).toBe(0);
  });

  it('a node outside the group forwards a serializable read to a member', async () => {
    const { g, leader } = await three();
    const outsider = await g.start('client');
    await leader.module.strong('r').set('k', 'x');
    const through = leader.module.replica.appliedThrough;
    await until(() => VOTERS.every((v) => g.member(v).module.replica.appliedThrough >= through));
    expect((await outsider.module.strong('r').get('k', { consistency: 'serializable' }))?.value).toBe('x');
    const served = VOTERS.reduce((n, v) => n + g.member(v).module.localReads.stats.serializable, 0);
    expect(served).toBe(1);
  });

  it('bounded: served locally within the bound, refused with staleness_exceeded once it cannot be proven', async () => {
    const { g, leader, followers } = await three();
    const f = followers[0] as TestMember;
    const ns = f.module.strong('b');
    await leader.module.strong('b').set('k', 1);
    // The first read asks the leader for a read point, then answers from the follower's state.
    expect((await ns.get('k', { maxStalenessMs: 500 }))?.value).toBe(1);
    const asked = f.module.localReads.stats.pointsAnswered;
    expect(asked).toBeGreaterThan(0);
    // Within the bound, more reads need no new point: answered at once from the follower.
    for (let i = 0; i < 20; i++) expect((await ns.get('k', { maxStalenessMs: 5_000 }))?.value).toBe(1);
    expect(f.module.localReads.stats.pointsAnswered).toBeLessThanOrEqual(asked + 1);
    expect(f.module.localReads.stats.bounded).toBe(21);
    // A write acknowledged before the read: a bound of 0 ms must see it (a fresh point, applied through it).
    await leader.module.strong('b').set('k', 2);
    expect((await ns.get('k', { maxStalenessMs: 0 }))?.value).toBe(2);
    expect((await ns.get('k', { consistency: 'bounded', maxLagEntries: 0 }))?.value).toBe(2);
    // Cut off: while the point is young enough the follower still answers; past the bound it refuses.
    g.network.partition(
      [f.id],
      VOTERS.filter((v) => v !== f.id),
    );
    expect((await ns.get('k', { maxStalenessMs: 5_000 }))?.value).toBe(2);
    await new Promise((r) => setTimeout(r, 5)); // past the millisecond of the last point
    const err = await ns.get('k', { maxStalenessMs: 0 }).catch((e: unknown) => e);
    expect(isParleyError(err, 'staleness_exceeded')).toBe(true);
    expect((err as { retryable: boolean }).retryable).toBe(true);
    expect((err as { details: { maxStalenessMs: number } }).details.maxStalenessMs).toBe(0);
    g.network.heal();
    // Retryable: once the follower hears from a leader again, the same read is served.
    let value: unknown;
    await until(() => {
      ns.get('k', { maxStalenessMs: 0 }).then(
        (e) => {
          value = e?.value;
        },
        () => {},
      );
      return value === 2;
    });
  });

  it('refuses a bad mix of options with invalid_argument', async () => {
    const { leader } = await three();
    const ns = leader.module.strong('b');
    const bad = [
      { consistency: 'serializable' as const, maxStalenessMs: 10 },
      { consistency: 'bounded' as const },
      { maxStalenessMs: -1 },
      { maxLagEntries: 1.5 },
      { consistency: 'eventual' as 'serializable' },
    ];
    for (const o of bad) {
      await expect(ns.get('k', o)).rejects.toSatisfy((e) => isParleyError(e, 'invalid_argument'));
    }
    expect(await ns.get('k', { consistency: 'linearizable' })).toBeUndefined();
  });
});
