import { isParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import type { StrongChange } from '../api.js';
import { MAX_PENDING_READS } from './replica.js';
import { FAST, MemoryGroup } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

/** Resolves once `check()` holds (polled every 20 ms); fails after `timeoutMs`. */
async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

async function three(options = FAST) {
  group = new MemoryGroup(VOTERS, options);
  for (const id of VOTERS) await group.start(id);
  await group.waitForLeader();
  return group;
}

describe('strong module, a group of three', () => {
  it('any node may call: the leader, a follower and a non-member see one linearizable store', async () => {
    const g = await three();
    const outsider = await g.start('client');
    const leader = g.leader();
    const follower = [...g.members.values()].find((m) => m.id !== leader?.id && VOTERS.includes(m.id));
    expect(leader && follower).toBeTruthy();
    const a = await follower?.module.strong('ns').set('k', 1);
    const b = await outsider.module.strong('ns').set('k', 2, { ifVersion: a?.version });
    expect(b.operation).toBe('updated');
    expect((await leader?.module.strong('ns').get('k'))?.value).toBe(2);
    expect((await follower?.module.strong('ns').get('k'))?.version).toBe(b.version);
    expect((await outsider.module.strong('ns').get('k'))?.version).toBe(b.version);
    const lock = await outsider.module.locks('l').acquire('x', { owner: 'o', ttl: 10 });
    await expect(follower?.module.locks('l').acquire('x', { owner: 'p' })).rejects.toSatisfy((e) =>
      isParleyError(e, 'lock_held'),
    );
    await follower?.module.strong('ns').set('fenced', 1, { fence: lock });
    const st = await outsider.module.cluster.status();
    expect(st.voters).toEqual([]); // a non-member knows no membership until it is added
    const ls = await (leader?.module.cluster.status() ?? Promise.reject());
    expect(ls.voters).toEqual(VOTERS);
    expect(ls.peers.map((p) => p.peer)).toEqual(VOTERS.filter((v) => v !== leader?.id));
  });

  it('a node outside the group watches by polling a member, in revision order, resuming after a revision', async () => {
    const g = await three();
    const outsider = await g.start('client');
    const seen: StrongChange[] = [];
    const writer = g.member('v2').module.strong('wn');
    await writer.set('x', 0);
    const from = g.member('v2').module.replica.appliedThrough;
    const stop = outsider.module.strong('wn').watch({ prefix: 'a', fromRevision: from }, (c) => seen.push(c));
    await writer.set('a1', 1);
    await writer.set('b1', 1);
    await writer.delete('a1');
    await waitFor(() => seen.length >= 2, 3_000);
    stop();
    expect(seen.map((c) => `${c.type}:${c.key}`)).toEqual(['set:a1', 'delete:a1']);
    const replay: StrongChange[] = [];
    const stop2 = outsider.module.strong('wn').watch({ fromRevision: seen[0]?.revision }, (c) => replay.push(c));
    await waitFor(() => replay.length >= 2, 3_000);
    stop2();
    expect(replay.map((c) => `${c.type}:${c.key}`)).toEqual(['set:b1', 'delete:a1']);
  });

  it('lease reads (an option) answer through any node', async () => {
    const g = await three({ ...FAST, leaseReads: true });
    const l = g.leader();
    const f = [...g.members.values()].find((m) => m.id !== l?.id);
    expect(l?.module.options.leaseReads).toBe(true);
    const w = await f?.module.strong('lr').set('k', 1);
    expect((await f?.module.strong('lr').get('k'))?.version).toBe(w?.version);
    expect((await l?.module.strong('lr').get('k'))?.version).toBe(w?.version);
  });

  it('a write retried across a leader crash is applied once, and every acknowledged write survives', async () => {
    const g = await three();
    const outsider = await g.start('client');
    const ns = outsider.module.strong('counter');
    let acked = 0;
    for (let i = 0; i < 10; i++) {
      await ns.doc<{ n: number }>('c').update((c) => ({ n: c.n + 1 }), { create: { n: 0 } });
      acked++;
      if (i === 4) await g.stop((g.leader() ?? g.member('v1')).id);
    }
    expect((await ns.get('c'))?.value).toEqual({ n: acked });
    // The stopped voter comes back from its disk and catches up.
    const down = VOTERS.find((v) => !g.members.has(v)) as string;
    const back = await g.start(down);
    expect((await back.module.strong('counter').get('c'))?.value).toEqual({ n: 10 });
  });

  it('on the minority side a call fails with unavailable or timeout within its bound', async () => {
    const g = await three({ ...FAST, callTimeoutMs: 1_000 });
    const leader = g.leader();
    const follower = [...g.members.values()].find((m) => m.id !== leader?.id);
    if (!follower) throw new Error('no follower');
    g.network.partition(
      [follower.id],
      VOTERS.filter((v) => v !== follower.id),
    );
    const t0 = Date.now();
    const err = await follower.module
      .strong('ns')
      .set('k', 1, { timeoutMs: 800 })
      .catch((e) => e);
    const took = Date.now() - t0;
    expect(isParleyError(err) && ['unavailable', 'timeout'].includes(err.code)).toBe(true);
    expect(took).toBeLessThan(800 + 1_000);
    const readErr = await follower.module
      .strong('ns')
      .get('k')
      .catch((e) => e);
    expect(isParleyError(readErr) && ['unavailable', 'timeout'].includes(readErr.code)).toBe(true);
    g.network.heal();
    await follower.module.strong('ns').set('k', 2);
  });

  it('an isolated leader never answers a read from stale state; its pending reads fail and are retried on the new leader', async () => {
    const g = await three();
    const old = g.leader();
    if (!old) throw new Error('no leader');
    const others = VOTERS.filter((v) => v !== old.id);
    const other = g.member(others[0] as string);
    await other.module.strong('ns').set('k', 'before');
    g.network.partition([old.id], others);
    // The majority elects a new leader and writes; the old leader's reads must not see 'before'.
    const write = other.module.strong('ns').set('k', 'after');
    const read = old.module
      .strong('ns')
      .get('k')
      .catch((e) => e);
    await write;
    g.network.heal();
    const r = await read;
    if (isParleyError(r)) expect(['unavailable', 'timeout', 'not_leader']).toContain(r.code);
    else expect(r?.value).toBe('after');
    expect((await old.module.strong('ns').get('k'))?.value).toBe('after');
  });

  it('a leader that steps down fails its pending reads and proposals at once with not_leader', async () => {
    const g = await three();
    const old = g.leader();
    if (!old) throw new Error('no leader');
    g.network.partition(
      [old.id],
      VOTERS.filter((v) => v !== old.id),
    );
    // Cut off, the leader cannot confirm a read (no quorum answers its heartbeat) nor commit.
    const read = old.module.replica.read({ type: 'get', namespace: 'ns', key: 'k' });
    const write = old.module.replica.submit({ op: { type: 'register_session' } });
    const t0 = Date.now();
    const within = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<string>((r) => setTimeout(() => r('still pending after 3 s'), 3_000))]);
    const [r, w] = await Promise.all([within(read.promise.catch((e) => e)), within(write.promise.catch((e) => e))]);
    // Check-quorum deposes it within about two election timeouts (200–400 ms here), and both fail then.
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(isParleyError(r, 'not_leader')).toBe(true);
    expect(isParleyError(w, 'not_leader')).toBe(true);
    expect(r.retryable).toBe(true);
    g.network.heal();
  });

  it('a leader cut off holds at most MAX_PENDING_READS reads; one more is refused with unavailable, unsent', async () => {
    const g = await three();
    const old = g.leader();
    if (!old) throw new Error('no leader');
    g.network.partition(
      [old.id],
      VOTERS.filter((v) => v !== old.id),
    );
    // Cut off, it confirms none of them: they wait until it steps down.
    const pending = Array.from({ length: MAX_PENDING_READS }, () =>
      old.module.replica.read({ type: 'get', namespace: 'ns', key: 'k' }),
    );
    let refused: unknown;
    try {
      old.module.replica.read({ type: 'get', namespace: 'ns', key: 'k' });
    } catch (err) {
      refused = err;
    }
    expect(isParleyError(refused, 'unavailable')).toBe(true);
    expect((refused as { details: Record<string, unknown> }).details.unsent).toBe(true);
    for (const p of pending) {
      p.promise.catch(() => {});
      p.cancel(new Error('test over'));
    }
    g.network.heal();
  });

  it('membership: a non-member added as learner, promoted, made leader, and a voter removed', async () => {
    const g = await three();
    const joiner = await g.start('v4');
    const caller = g.member('v1').module;
    await caller.strong('m').set('before', 1);
    await caller.cluster.addLearner('v4');
    expect((await caller.cluster.status()).learners).toEqual(['v4']);
    await caller.cluster.addLearner('v4'); // Raft takes a repeated change as a no-op: a retry after a lost answer succeeds
    await caller.cluster.promote('v4');
    await caller.strong('m').set('after', 2);
    expect((await joiner.module.strong('m').get('before'))?.value).toBe(1);
    await joiner.module.cluster.transferLeadership('v4');
    expect(joiner.module.replica.isLeader()).toBe(true);
    await caller.cluster.removeVoter('v3');
    await caller.cluster.removeVoter('v3');
    const st = await joiner.module.cluster.status();
    expect(st.voters).toEqual(['v1', 'v2', 'v4']);
    expect(st.leader).toBe('v4');
    await caller.strong('m').set('still', 3);
  });

  it('snapshots compact the log and a member restarted from disk recovers the state', async () => {
    const g = await three({ ...FAST, snapshotEveryEntries: 20, keepEntries: 2 });
    const l = g.leader();
    if (!l) throw new Error('no leader');
    const ns = l.module.strong('s');
    for (let i = 0; i < 60; i++) await ns.set(`k${i % 5}`, i);
    expect(l.module.replica.snapshotsTaken).toBeGreaterThan(0);
    expect(l.ctx.storage.raftLog.firstIndex()).toBeGreaterThan(20);
    const follower = VOTERS.find((v) => v !== l.id) as string;
    await g.stop(follower);
    for (let i = 60; i < 100; i++) await ns.set(`k${i % 5}`, i);
    const back = await g.start(follower);
    expect((await back.module.strong('s').get('k4'))?.value).toBe(99);
    // The read above is linearizable through the leader: it can answer before the restarted
    // member has caught up, which it does by InstallSnapshot (the leader kept 2 entries).
    await waitFor(() => back.module.replica.snapshotsRestored > 0, 30_000);
  });
});
