/**
 * Sessions on a strong namespace: a session's serializable read on a member
 * that lags its token waits for the member to apply through it, or fails
 * with `session_behind`; it never answers from an older state. The token
 * moves forward on every success and never on a failure.
 */
import { isParleyError, type PeerId, type RequestHandler, type Transport } from '@parley/interface';
import type { MemoryTransport } from '@parley/net';
import { RAFT_PROTOCOL } from '@parley/raft';
import { afterEach, describe, expect, it } from 'vitest';
import { Session } from '../session/session.js';
import { FAST, MemoryGroup, type TestMember } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

/** Members whose incoming Raft messages are dropped (they fall behind the log, and keep their leader for a while). */
const deaf = new Set<PeerId>();

function deafenable(t: MemoryTransport): Transport {
  return new Proxy(t, {
    get(target, prop) {
      if (prop === 'handle') {
        return (protocol: string, handler: RequestHandler) =>
          target.handle(protocol, (from, bytes) =>
            protocol === RAFT_PROTOCOL && deaf.has(target.peerId)
              ? Promise.resolve(new Uint8Array(0))
              : handler(from, bytes),
          );
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Transport;
}

async function three() {
  deaf.clear();
  // Elections of 300–600 ms: a member deaf for a few ticks still knows its leader.
  group = new MemoryGroup(VOTERS, { ...FAST, electionTimeoutTicks: 30 });
  for (const id of VOTERS) await group.start(id, {}, deafenable);
  const leader = await group.waitForLeader();
  const followers = VOTERS.filter((v) => v !== leader.id).map((v) => group?.member(v) as TestMember);
  return { g: group, leader, lagging: followers[0] as TestMember };
}

/** Resolves once `check()` holds (polled every 5 ms). */
async function until(check: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('sessions on a strong namespace', () => {
  it('a serializable read on a lagging member waits until it has applied the session’s write', async () => {
    const { leader, lagging } = await three();
    const s = Session.from();
    deaf.add(lagging.id);
    await leader.module.strong('s').set('k', 1, { session: s });
    expect(s.strong).toBeGreaterThan(lagging.module.replica.appliedThrough);
    const read = lagging.module.strong('s').get('k', { consistency: 'serializable', session: s });
    await until(() => lagging.module.localReads.stats.waited > 0);
    const token = s.strong;
    deaf.delete(lagging.id);
    expect((await read)?.value).toBe(1);
    expect(lagging.module.replica.appliedThrough).toBeGreaterThanOrEqual(token);
    expect(s.strong).toBeGreaterThanOrEqual(token);
    // A bounded read with the session is served from a state at or after the token too.
    const bounded = await lagging.module.strong('s').get('k', { maxStalenessMs: 60_000, session: s });
    expect(bounded?.value).toBe(1);
  });

  it('fails with session_behind when the member cannot catch up in time, leaving the session as it was', async () => {
    const { leader, lagging } = await three();
    const s = Session.from();
    await leader.module.strong('s').set('k', 1);
    await until(() => lagging.module.replica.appliedThrough >= leader.module.replica.appliedThrough);
    deaf.add(lagging.id);
    await leader.module.strong('s').set('k', 2, { session: s });
    const token = s.token;
    const err = await lagging.module
      .strong('s')
      .get('k', { consistency: 'serializable', session: s, timeoutMs: 100 })
      .catch((e: unknown) => e);
    expect(isParleyError(err, 'session_behind')).toBe(true);
    expect((err as { retryable: boolean }).retryable).toBe(true);
    const details = (err as { details: { need: number; applied: number } }).details;
    expect(details.need).toBe(s.strong);
    expect(details.applied).toBeLessThan(details.need);
    expect(s.token).toBe(token);
    // Without the session, the same member answers its stale state at once.
    expect((await lagging.module.strong('s').get('k', { consistency: 'serializable' }))?.value).toBe(1);
    deaf.delete(lagging.id);
    expect((await lagging.module.strong('s').get('k', { consistency: 'serializable', session: s }))?.value).toBe(2);
  });

  it('moves the token forward on every success, never on a failure; a node outside the group passes it on', async () => {
    const { g, leader, lagging } = await three();
    const ns = leader.module.strong('t');
    const s = Session.from();
    const first = await ns.set('k', 'a', { session: s });
    const t1 = s.strong;
    expect(t1).toBeGreaterThan(0);
    await ns.set('k', 'b', { session: s });
    const t2 = s.strong;
    expect(t2).toBeGreaterThan(t1);
    // A conditional write that loses, and a claim that is refused, fail: the session stays.
    await expect(ns.set('k', 'c', { ifVersion: first.version, session: s })).rejects.toSatisfy((e) =>
      isParleyError(e, 'version_mismatch'),
    );
    expect(s.strong).toBe(t2);
    // A read that finds nothing has seen the state it was answered from.
    expect(await ns.get('absent', { session: s })).toBeUndefined();
    expect(s.strong).toBeGreaterThanOrEqual(t2);
    expect(await ns.delete('absent', { session: s })).toBe(false);
    const claimed = await ns.claim('c', 1, { session: s });
    expect(claimed.won).toBe(true);
    const t3 = s.strong;
    expect(t3).toBeGreaterThan(t2);
    // A token that does not decode is refused before anything is sent.
    expect(() => Session.from('!!')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    // From outside the group: the serializable read is forwarded with the token, served at or after it.
    const outsider = await g.start('client');
    deaf.add(lagging.id);
    await ns.set('k', 'd', { session: s });
    const page = await outsider.module.strong('t').list({ consistency: 'serializable', session: s });
    expect(page.items.find((e) => e.key === 'k')?.value).toBe('d');
    expect(s.strong).toBeGreaterThan(t3);
  });

  it('a lease and a doc update carry the session through every call', async () => {
    const { leader } = await three();
    const ns = leader.module.strong('l');
    const s = Session.from();
    const lease = await ns.lease('job', { ttl: 30, holder: 'w', session: s });
    const acquired = s.strong;
    expect(acquired).toBeGreaterThan(0);
    await lease.renew();
    expect(s.strong).toBeGreaterThan(acquired);
    const renewed = s.strong;
    const again = await ns.attach('job', 'w', { session: s });
    expect(again?.epoch).toBe(lease.epoch);
    expect(s.strong).toBeGreaterThanOrEqual(renewed);
    await lease.release();
    const released = s.strong;
    expect(released).toBeGreaterThan(renewed);
    await ns.doc<{ n: number }>('d').update((d) => ({ n: d.n + 1 }), { create: { n: 0 }, session: s });
    expect(s.strong).toBeGreaterThan(released);
  });
});
