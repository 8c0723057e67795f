/**
 * A CAS that is sure to fail is answered at a read point without a log
 * entry — on its first attempt only, and only by a leader that confirms it
 * still leads (docs/guarantees.md, "A CAS that is sure to fail").
 */
import type { Command, CommandResult } from '@parley/coord';
import { isParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST, MemoryGroup, type TestMember } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

/** Three voters (elections of 300–600 ms), the CAS entries each applies, and a session registered on the leader. */
async function three() {
  const g = new MemoryGroup(VOTERS, { ...FAST, electionTimeoutTicks: 30 });
  group = g;
  const applied = new Map<string, Command[]>(VOTERS.map((id) => [id, []]));
  for (const id of VOTERS) {
    await g.start(id, {
      hooks: {
        onApply: (_i, _t, c) => {
          if (c?.op.type === 'set' && c.op.ifVersion !== undefined) applied.get(id)?.push(c);
        },
      },
    });
  }
  const leader = await g.waitForLeader();
  // The leader applies an entry before it answers: its list is current when a call returns.
  const cas = applied.get(leader.id) as Command[];
  const reg = await leader.module.replica.submit({ op: { type: 'register_session' } }).promise;
  const clientId = reg.ok && reg.value.type === 'session' ? reg.value.clientId : '';
  return { g, leader, cas, clientId };
}

const version = (r: CommandResult) => (r.ok && r.value.type === 'entry' ? r.value.entry.version : '');

/** A `set` of `c/<key>` by session `clientId` at `seq`: a CAS when `ifVersion` is given. */
function setCommand(
  clientId: string,
  seq: number,
  value: number,
  ifVersion?: string,
  key = 'k',
): Omit<Command, 'nowMs'> {
  return {
    clientId,
    seq,
    op: { type: 'set', namespace: 'c', key, value, ...(ifVersion === undefined ? {} : { ifVersion }) },
  };
}

describe('a CAS sure to fail', () => {
  it('fails with details.actual at a read point and appends no entry', async () => {
    const { leader, cas } = await three();
    const ns = leader.module.strong('c');
    const v1 = (await ns.set('k', 1)).version;
    const v2 = (await ns.set('k', 2, { ifVersion: v1 })).version;
    const err = await ns.set('k', 3, { ifVersion: v1 }).catch((e: unknown) => e);
    expect(isParleyError(err, 'version_mismatch') && err.details).toMatchObject({ expected: v1, actual: v2 });
    expect(leader.module.replica.fastPath.fastFailed).toBe(1);
    await ns.set('k', 3, { ifVersion: v2 });
    expect(cas.map((c) => c.op.type === 'set' && c.op.value)).toEqual([2, 3]); // the doomed one is in no log
  });

  it('a retried attempt, or one the session table knows, goes through the log', async () => {
    const { leader, cas, clientId } = await three();
    const r = leader.module.replica;
    const set = (seq: number, value: number, ifVersion?: string) => setCommand(clientId, seq, value, ifVersion);
    const v1 = version(await r.submit(set(1, 1)).promise);
    const won = set(2, 2, v1);
    expect((await r.submit(won).promise).ok).toBe(true);
    // The winning CAS again, as a first attempt would look: its version is stale now, but the table
    // knows the seq, so the log answers it from there: it won (issue 23).
    expect(await r.submit(won).promise).toMatchObject({ ok: true, value: { type: 'entry' } });
    // A doomed CAS sent as a retry: through the log, failing there.
    expect(await r.submit(set(3, 3, v1), { retry: true }).promise).toMatchObject({
      ok: false,
      error: { code: 'version_mismatch' },
    });
    expect(r.fastPath.fastFailed).toBe(0);
    expect(cas.map((c) => c.seq)).toEqual([2, 2, 3]);
  });

  it('a leader cut off from its quorum cannot fast-fail: it steps down and the call fails not_leader', async () => {
    const { g, leader, clientId } = await three();
    const r = leader.module.replica;
    await r.submit({ clientId, seq: 1, op: { type: 'set', namespace: 'c', key: 'k', value: 1 } }).promise;
    g.network.partition(
      [leader.id],
      VOTERS.filter((v) => v !== leader.id),
    );
    // Doomed by the cut-off leader's own state (a version the new leader may mint), never confirmed.
    const pending = r.submit({
      clientId,
      seq: 2,
      op: { type: 'set', namespace: 'c', key: 'k', value: 2, ifVersion: 'not-yet-minted' },
    });
    const outcome = await pending.promise.then(
      (res) => res,
      (e: unknown) => e,
    );
    expect(isParleyError(outcome, 'not_leader')).toBe(true);
    expect(r.fastPath.fastFailed).toBe(0);
    expect(r.isLeader()).toBe(false);
    const others = VOTERS.filter((v) => v !== leader.id).map((v) => g.member(v) as TestMember);
    await g.waitForLeader(5_000, others);
  });

  it('CASes behind a pending write of their key wait for it, then fail: one entry', async () => {
    const { leader, cas, clientId } = await three();
    const r = leader.module.replica;
    const set = (seq: number, value: number, ifVersion?: string) => setCommand(clientId, seq, value, ifVersion, 'hot');
    const v1 = version(await r.submit(set(1, 1)).promise);
    // Sixteen clients with the same version at once: the first is proposed, fifteen wait behind it.
    const all = Array.from({ length: 16 }, (_, i) => r.submit(set(2 + i, 10 + i, v1)).promise);
    expect(r.fastPath.hold.holds).toBe(15);
    const results = await Promise.all(all);
    const won = results.filter((x) => x.ok);
    expect(won).toHaveLength(1);
    const v2 = version(won[0] as CommandResult);
    for (const x of results.filter((y) => !y.ok)) {
      expect(x).toMatchObject({ ok: false, error: { code: 'version_mismatch', details: { actual: v2 } } });
    }
    expect(r.fastPath.fastFailed).toBe(15);
    expect(r.fastPath.supersededFailed).toBe(15); // their version was current when held: no read point either
    expect(cas.map((c) => c.seq)).toEqual([2]); // the fifteen losers are in no log
  });

  it('a CAS held when its leader steps down fails not_leader, unsent, and was never proposed', async () => {
    const { g, leader, cas, clientId } = await three();
    const r = leader.module.replica;
    const v1 = version(await r.submit(setCommand(clientId, 1, 1)).promise);
    g.network.partition(
      [leader.id],
      VOTERS.filter((v) => v !== leader.id),
    );
    const first = r.submit(setCommand(clientId, 2, 2, v1)).promise.catch((e: unknown) => e);
    const held = r.submit(setCommand(clientId, 3, 3, v1)).promise.catch((e: unknown) => e);
    expect(r.fastPath.hold.holds).toBe(1);
    const err = await held;
    expect(isParleyError(err, 'not_leader') && err.details.unsent).toBe(true);
    expect(isParleyError(await first, 'not_leader')).toBe(true);
    expect(cas.some((c) => c.seq === 3)).toBe(false);
  });

  it('a held CAS whose version this leader never stored still fails only at a read point', async () => {
    const { leader, cas, clientId } = await three();
    const r = leader.module.replica;
    await r.submit(setCommand(clientId, 1, 1)).promise;
    const ahead = r.submit(setCommand(clientId, 2, 2)).promise;
    // A token this leader never stored (a successor may have minted it): not gone for good here.
    const held = r.submit(setCommand(clientId, 3, 3, 'minted-elsewhere')).promise;
    expect(r.fastPath.hold.holds).toBe(1);
    await ahead;
    expect(await held).toMatchObject({ ok: false, error: { code: 'version_mismatch' } });
    expect(r.fastPath.fastFailed).toBe(1);
    expect(r.fastPath.supersededFailed).toBe(0); // it went to the read point
    expect(cas).toEqual([]);
  });
});
