/**
 * Fail fast: a node that knows there is no leader answers `unavailable`
 * (retryable, unsent) within about one election timeout instead of holding
 * the call to its bound — a follower cut off from the leader, an isolated
 * leader deposed by check-quorum, a learner that has not heard from its leader
 * for an election timeout, a node outside the group whose members all know no
 * leader — while a write that may already have been proposed is
 * never answered `unavailable`: its outcome is unknown, and it ends `timeout`.
 */
import { isParleyError, type ParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST, MemoryGroup, type TestMember } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];
/** FAST's election timeout (10 ticks of 10 ms); its calls' bound is 5 s. */
const ELECTION_MS = 100;
/** Well within the 5 s bound, a few election timeouts (deposition, pre-vote, then one timeout of knowing). */
const FAST_MS = 1_500;

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

async function three(): Promise<MemoryGroup> {
  group = new MemoryGroup(VOTERS, FAST);
  for (const id of VOTERS) await group.start(id);
  await group.waitForLeader();
  return group;
}

/** How `p` ended and how long it took. */
async function outcome(p: Promise<unknown>): Promise<{ err: ParleyError | undefined; ms: number }> {
  const t0 = Date.now();
  const err = await p.then(
    () => undefined,
    (e: unknown) => (isParleyError(e) ? e : Promise.reject(e)),
  );
  return { err, ms: Date.now() - t0 };
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const others = (m: TestMember) => VOTERS.filter((v) => v !== m.id);

describe('fail fast', () => {
  it('a follower cut off from the leader answers unavailable within a few election timeouts; nothing applies', async () => {
    const g = await three();
    const leader = g.leader() as TestMember;
    const follower = g.member(others(leader)[0] as string);
    g.network.partition([follower.id], others(follower));
    const write = await outcome(follower.module.strong('ns').set('k', 1));
    expect(write.err).toMatchObject({ code: 'unavailable', status: 503, retryable: true });
    expect(write.err?.details.unsent).toBe(true);
    expect(write.ms).toBeLessThan(FAST_MS);
    // Now that it knows, every call fails at once, reads and lock calls too.
    for (const call of [
      follower.module.strong('ns').get('k'),
      follower.module.locks('l').acquire('x', { owner: 'o', ttl: 5 }),
    ]) {
      const r = await outcome(call);
      expect(r.err?.code).toBe('unavailable');
      expect(r.ms).toBeLessThan(4 * ELECTION_MS);
    }
    g.network.heal();
    await waitFor(() => follower.module.replica.leaderHint() !== undefined, 5_000);
    // The write answered unavailable was not applied, nor will it be.
    expect(await follower.module.strong('ns').get('k')).toBeUndefined();
  });

  it('an isolated leader: new calls fail fast with unavailable; a write it had proposed ends timeout, never unavailable', async () => {
    const g = await three();
    const old = g.leader() as TestMember;
    await old.module.strong('ns').set('warm', 0); // its session is registered
    g.network.partition([old.id], others(old));
    // Proposed while it still leads: its outcome is unknown until a leader answers it.
    const proposed = outcome(old.module.strong('ns').set('k', 'proposed', { timeoutMs: 2_000 }));
    await waitFor(() => !old.module.replica.isLeader(), 3_000); // check-quorum deposed it
    const fresh = await outcome(old.module.strong('ns').set('j', 1));
    expect(fresh.err).toMatchObject({ code: 'unavailable', retryable: true });
    expect(fresh.ms).toBeLessThan(FAST_MS);
    const read = await outcome(old.module.strong('ns').get('warm'));
    expect(read.err?.code).toBe('unavailable');
    const first = await proposed;
    expect(first.err?.code).toBe('timeout');
    expect(first.ms).toBeGreaterThanOrEqual(1_900);
    g.network.heal();
  });

  it('a learner cut off from its leader answers unavailable once it has not heard from it; nothing applies', async () => {
    const g = await three();
    const learner = await g.start('l1');
    await (g.leader() as TestMember).module.cluster.addLearner('l1');
    await learner.module.strong('ns').set('warm', 0); // it knows the leader and has a session
    // A learner never campaigns, so its Raft view keeps naming the leader it no longer hears from.
    g.network.partition(['l1'], VOTERS);
    // Once it has not heard from it for an election timeout (a write sent before then may have been proposed).
    await waitFor(() => learner.module.replica.driver.probe.electionElapsed >= 10, 3_000);
    expect(learner.module.replica.leaderHint()).toBeDefined();
    const write = await outcome(learner.module.strong('ns').set('k', 1));
    expect(write.err).toMatchObject({ code: 'unavailable', status: 503, retryable: true });
    expect(write.err?.details.unsent).toBe(true);
    expect(write.ms).toBeLessThan(FAST_MS);
    const read = await outcome(learner.module.strong('ns').get('k'));
    expect(read.err?.code).toBe('unavailable');
    expect(read.ms).toBeLessThan(4 * ELECTION_MS);
    g.network.heal();
    // Heard from again: it serves calls, and the write answered unavailable never applied.
    await waitFor(() => learner.module.replica.driver.probe.electionElapsed < 10, 5_000);
    expect(await learner.module.strong('ns').get('k')).toBeUndefined();
    await learner.module.strong('ns').set('after', 2);
  });

  it('a node outside the group whose members all know no leader answers unavailable, with nothing sent', async () => {
    const g = await three();
    const client = await g.start('client');
    await client.module.strong('ns').set('warm', 0);
    // Every voter cut off from the others: no quorum anywhere; the client still reaches each.
    g.network.partition(['v1'], ['v2'], ['v3']);
    // Once the leader is deposed (a write sent to it before then may have been proposed: it would end timeout).
    const voters = VOTERS.map((v) => g.member(v).module.replica);
    await waitFor(() => voters.every((r) => !r.isLeader() && r.leaderHint() === undefined), 3_000);
    const write = await outcome(client.module.strong('ns').set('k', 1));
    expect(write.err).toMatchObject({ code: 'unavailable', retryable: true });
    expect(write.err?.details.unsent).toBe(true);
    expect(write.ms).toBeLessThan(FAST_MS + 1_000);
    g.network.heal();
    await g.waitForLeader();
    expect(await client.module.strong('ns').get('k')).toBeUndefined();
  });
});
