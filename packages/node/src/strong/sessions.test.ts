/**
 * The session pool's exactly-once rules, through a node outside a group of
 * three whose transport can lose the answer of one chosen write (the request
 * reaches the leader and is applied; the answer never comes back, so the
 * router retries the same session command).
 */
import type { Operation } from '@parley/coord';
import { isParleyError, TimeoutError, type Transport } from '@parley/interface';
import type { MemoryTransport } from '@parley/net';
import { afterEach, describe, expect, it } from 'vitest';
import type { StrongOptions } from './options.js';
import { FAST, interceptRequests, MemoryGroup, type TestMember } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

/** Resolves once `check()` holds (polled every 5 ms); fails after `timeoutMs`. */
async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Loses the answer of the first forwarded write whose operation `matches`:
 * the request is delivered (and applied), and the caller's attempt fails with
 * `timeout` once `release()` is called or its own timeout passes.
 */
class LostAnswer {
  delivered = false;
  private done = false;
  private fire: (() => void) | undefined;

  constructor(private readonly matches: (op: Operation) => boolean) {}

  release(): void {
    this.fire?.();
  }

  wrap(t: MemoryTransport): Transport {
    return interceptRequests(t, (send, op, options) => {
      const answer = send();
      if (this.done || op === undefined || !this.matches(op)) return answer;
      this.done = true;
      return new Promise<Uint8Array>((_, reject) => {
        const timer = setTimeout(() => this.fire?.(), options?.timeoutMs ?? 5_000);
        this.fire = () => {
          clearTimeout(timer);
          this.fire = undefined;
          reject(new TimeoutError('answer lost'));
        };
        answer.then(
          () => {
            this.delivered = true;
          },
          () => {},
        );
      });
    });
  }
}

async function groupWithClient(
  lost: LostAnswer,
  clientOptions: StrongOptions = {},
  options: StrongOptions = {},
): Promise<{ g: MemoryGroup; client: TestMember }> {
  group = new MemoryGroup(VOTERS, { ...FAST, ...options });
  for (const id of VOTERS) await group.start(id);
  await group.waitForLeader();
  const client = await group.start('client', {}, (t) => lost.wrap(t), clientOptions);
  return { g: group, client };
}

const isClaim = (op: Operation) => op.type === 'claim';

describe('session pool: a write whose answer is lost', () => {
  it.each([
    { remembered: 64, limits: {} },
    { remembered: 8, limits: { maxResultsPerSession: 8 } },
  ])(
    'is answered with its first result although more later results passed on its session than coord keeps ($remembered)',
    async ({ remembered, limits }) => {
      const lost = new LostAnswer(isClaim);
      const { client } = await groupWithClient(lost, { maxSessions: 1, limits }, { limits });
      const ns = client.module.strong('jobs');
      await ns.set('warm', 0);

      let settled = false;
      const claim = ns.claim('daily', 'mine').finally(() => {
        settled = true;
      });
      await waitFor(() => lost.delivered, 5_000);
      // Eight workers keep writing through the same (only) session meanwhile.
      let answered = 0;
      const workers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; !settled; i++) {
          await ns.set(`w${w}-${i % 4}`, i);
          answered++;
          // Far more than coord's remembered results: the claim's answer would be forgotten.
          if (answered === remembered + 16) lost.release();
        }
      });
      const won = await claim;
      await Promise.all(workers);
      expect(won).toMatchObject({ won: true, value: 'mine' });
      expect((await ns.get('daily'))?.value).toBe('mine');
      // The window held later writes back (31 at most) until the claim's retry was answered.
      expect(answered).toBeGreaterThan(0);
    },
    15_000,
  );

  it('fails with outcome_unknown when coord forgot its result (global byte bound), and is not applied again', async () => {
    const lost = new LostAnswer((op) => op.type === 'set' && op.key === 'once');
    // A 1-byte bound: every result recorded forgets the other sessions' results.
    const { g, client } = await groupWithClient(lost, {}, { limits: { maxCachedResultBytes: 1 } });
    const ns = client.module.strong('jobs');
    await ns.set('warm', 0);
    const create = ns.set('once', 'mine', { ifNotExists: true });
    await waitFor(() => lost.delivered, 5_000);
    // A write through another node (another session) makes coord forget the create's result.
    await g.member('v1').module.strong('jobs').set('other', 1);
    lost.release();
    const err = await create.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isParleyError(err, 'outcome_unknown')).toBe(true);
    expect(isParleyError(err) && [err.status, err.retryable, err.details.reason]).toEqual([
      504,
      false,
      'stale_sequence',
    ]);
    // Applied exactly once: the entry is the create's, and no second command was issued for it.
    const entry = await ns.get('once');
    expect(entry?.value).toBe('mine');
    const creates = g
      .member('v1')
      .module.replica.changes.since(0, { namespace: 'jobs' }, 100)
      .filter((c) => c.key === 'once');
    expect(creates).toHaveLength(1);
  }, 15_000);

  it('fails with outcome_unknown when its session was evicted meanwhile', async () => {
    const lost = new LostAnswer(isClaim);
    // coord keeps one session: any other registration evicts the client's.
    const { g, client } = await groupWithClient(lost, {}, { limits: { maxSessions: 1 } });
    const ns = client.module.strong('jobs');
    await ns.set('warm', 0);
    const claim = ns.claim('daily', 'mine');
    await waitFor(() => lost.delivered, 5_000);
    await g.member('v2').module.strong('jobs').set('other', 1); // registers v2's session, evicting the client's
    lost.release();
    const err = await claim.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isParleyError(err, 'outcome_unknown')).toBe(true);
    expect(isParleyError(err) && err.details.reason).toBe('session_expired');
    expect((await g.member('v2').module.strong('jobs').get('daily'))?.value).toBe('mine');
  }, 15_000);

  it('is re-issued under a fresh session when its session was gone before its only arrival', async () => {
    group = new MemoryGroup(VOTERS, { ...FAST, limits: { maxSessions: 1 } });
    for (const id of VOTERS) await group.start(id);
    // The leader serves its own calls: each is one attempt, its answer that of its only arrival.
    const leader = await group.waitForLeader();
    const other = [...group.members.values()].find((m) => m.id !== leader.id) as TestMember;
    const ns = leader.module.strong('jobs');
    await ns.set('warm', 0);
    await other.module.strong('jobs').set('other', 1); // registers its session, evicting the leader's
    const won = await ns.claim('daily', 'mine');
    expect(won).toMatchObject({ won: true, value: 'mine' });
    await expect(other.module.strong('jobs').claim('daily', 'theirs')).resolves.toMatchObject({
      won: false,
      value: 'mine',
    });
    expect(leader.module.sessions.outcomeUnknown).toBe(0);
  }, 15_000);
});

describe('session pool: calls made in the same turn', () => {
  it('get distinct slots: 100 concurrent sets on one node all succeed', async () => {
    group = new MemoryGroup(['solo'], FAST);
    const m = await group.start('solo');
    const ns = m.module.strong('burst');
    const outcomes = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => ns.set(`k${i}`, i)));
    const failed = outcomes.filter((o) => o.status === 'rejected').map((o) => String(o.reason));
    expect(failed).toEqual([]);
    expect((await ns.list({ limit: 1000 })).items).toHaveLength(100);
  }, 15_000);

  it('past every session window they queue, up to the bound, and then fail with unavailable', async () => {
    group = new MemoryGroup(['solo'], FAST);
    const m = await group.start('solo', {}, undefined, { maxSessions: 1, maxQueuedCalls: 10 });
    const ns = m.module.strong('burst');
    const outcomes = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => ns.set(`k${i}`, i)));
    const codes = outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : (o.reason as { code?: string }).code));
    // One session: 32 in its window, 10 queued, the other 8 refused at once.
    expect(codes.filter((c) => c === 'ok')).toHaveLength(42);
    expect(codes.filter((c) => c === 'unavailable')).toHaveLength(8);
  }, 15_000);
});

describe('session pool: queued calls whose deadline passed', () => {
  it('fail with their own error and open no registration, after a wall-clock jump during an outage', async () => {
    group = new MemoryGroup(VOTERS, FAST);
    for (const id of VOTERS) await group.start(id);
    await group.waitForLeader();
    let offsetMs = 0;
    const clock = { nowMs: () => Date.now() + offsetMs };
    const client = await group.start('client', {}, undefined, { maxSessions: 2, callTimeoutMs: 2_000 }, clock);
    const ns = client.module.strong('jobs');
    await ns.set('warm', 0); // one session registered
    for (const id of VOTERS) await group.stop(id); // the whole group is down
    // Count the registrations the pool sends; a loop of them that never yields is the bug.
    const router = client.module.router;
    const send = router.send.bind(router);
    let registrations = 0;
    router.send = (body, ...rest) => {
      if (body.kind === 'register' && ++registrations > 1_000) throw new Error('registration loop');
      return send(body, ...rest);
    };
    // 32 calls fill the session's window (one more registration opens); the 33rd queues.
    const calls = Array.from({ length: 34 }, (_, i) =>
      ns.set(`k${i}`, i).then(
        () => 'ok',
        (e: unknown) => (isParleyError(e) ? e.code : String(e)),
      ),
    );
    await waitFor(() => client.module.sessions.queued > 0, 2_000);
    offsetMs = 60_000; // the wall clock jumps past every deadline; the timers do not
    const codes = await Promise.all(calls);
    // Never sent (unavailable) or sent to members that may have been reached (timeout): none applied, none hung.
    expect(codes.filter((c) => c !== 'unavailable' && c !== 'timeout')).toEqual([]);
    expect(registrations).toBeLessThan(10);
    expect(client.module.sessions.queued).toBe(0);
  }, 15_000);
});
