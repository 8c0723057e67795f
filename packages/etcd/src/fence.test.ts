/**
 * The fence check of fenced entry writes: coord's rules on hand-made lock
 * slots (no etcd needed), and fenced set/delete against a real 3-member etcd,
 * side by side with coord's state machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockGrant, Operation, OpResult } from '@parley/coord';
import { DEFAULT_LIMITS } from '@parley/coord';
import type { IKeyValue } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EtcdBackend } from './backend.js';
import { makeFenceCheck } from './fence.js';
import { KeyLayout } from './keys.js';
import { encodeSlot, type SlotRecord } from './lock-records.js';
import { EtcdCluster } from './testing/etcd-cluster.js';
import { backendOn, CoordOracle, codeOf, etcdForTests, ManualClock, runOn } from './testing/lock-fixture.js';

const keys = new KeyLayout('/f');
const limits = DEFAULT_LIMITS;
const DAY = 86_400_000;

function kvOf(slot: SlotRecord, modRevision = 42): IKeyValue {
  return {
    key: keys.lock('ns', 'l'),
    value: encodeSlot(slot),
    create_revision: '7',
    mod_revision: String(modRevision),
    version: '3',
    lease: '0',
  };
}

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('the fence check on a lock slot as read', () => {
  const clock = new ManualClock(1_700_000_000_000);
  const check = makeFenceCheck(keys, limits, clock);
  const held: SlotRecord = {
    holder: {
      owner: 'o',
      fence: 40,
      acquiredAt: clock.ms,
      expiresAt: clock.ms + 60_000,
      ttlSeconds: 60,
      metadata: null,
    },
    lastFence: 40,
    freeSince: clock.ms - 1,
  };
  const fence = (token: number) => ({ namespace: 'ns', key: 'l', token });

  it('passes the last fence, pinning the slot key’s mod_revision', () => {
    expect(check(fence(40), kvOf(held, 42))).toEqual([
      { key: keys.lock('ns', 'l'), target: 'Mod', result: 'Equal', mod_revision: '42' },
    ]);
    // Released or expired, the last fence still passes: no newer holder exists.
    expect(check(fence(40), kvOf({ holder: null, lastFence: 40, freeSince: clock.ms }))).toHaveLength(1);
  });

  it('refuses a stale, an unknown, a never granted and a forgotten fence with coord’s codes', () => {
    expect(errorOf(() => check(fence(39), kvOf(held)))).toMatchObject({
      code: 'fence_stale',
      details: { lock: 'ns/l', fence: 39, current: 40 },
    });
    expect(errorOf(() => check(fence(40), undefined))).toMatchObject({ code: 'fence_stale', details: { current: 0 } });
    expect(errorOf(() => check(fence(41), kvOf(held)))).toMatchObject({
      code: 'invalid_argument',
      details: { fence: 41, lastFence: 40 },
    });
    const free: SlotRecord = { holder: null, lastFence: 40, freeSince: clock.ms - DAY };
    expect(errorOf(() => check(fence(40), kvOf(free)))).toMatchObject({ code: 'fence_stale', details: { current: 0 } });
    const expiredLongAgo: SlotRecord = {
      ...held,
      holder: { ...(held.holder as NonNullable<SlotRecord['holder']>), expiresAt: clock.ms - DAY },
    };
    expect(errorOf(() => check(fence(40), kvOf(expiredLongAgo)))).toMatchObject({ code: 'fence_stale' });
    expect(check(fence(40), kvOf({ ...free, freeSince: clock.ms - DAY + 1 }))).toHaveLength(1);
  });

  it('checks its arguments first, and reports a slot it cannot decode as storage_corrupt', () => {
    expect(errorOf(() => check(null as never, kvOf(held)))).toMatchObject({ code: 'invalid_argument' });
    expect(errorOf(() => check({ namespace: 'a/b', key: 'l', token: 1 }, kvOf(held)))).toMatchObject({
      code: 'invalid_argument',
    });
    expect(errorOf(() => check(fence(0), kvOf(held)))).toMatchObject({ code: 'invalid_argument' });
    const bad = { ...kvOf(held), value: Buffer.from('{"format":1}') };
    expect(errorOf(() => check(fence(40), bad))).toMatchObject({ code: 'storage_corrupt' });
  });
});

const bin = etcdForTests("@parley/etcd's fence tests");
let cluster: EtcdCluster;
let dir: string;
const opened: EtcdBackend[] = [];

function grantOf(r: OpResult): LockGrant {
  if (r.type !== 'lock') throw new Error(`expected a grant, got ${JSON.stringify(r)}`);
  return r.lock;
}

describe.skipIf(!bin)('fenced writes on a 3-member etcd', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-etcd-fence-'));
    cluster = await EtcdCluster.start(bin as string, dir);
  }, 60_000);

  afterAll(async () => {
    for (const b of opened) await b.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a write fenced by the last grant and refuses it once a newer holder exists, as coord does', async () => {
    const clock = new ManualClock();
    const b = backendOn(cluster, clock, 7);
    opened.push(b);
    const oracle = new CoordOracle(clock);
    const both = async (op: Operation, etcdFence?: number, coordFence?: number) => {
      const withFence = (f: number | undefined) =>
        f === undefined || !('value' in op || op.type === 'delete')
          ? op
          : ({ ...op, fence: { namespace: 'locks', key: 'deploy', token: f } } as Operation);
      const r = await runOn(b, withFence(etcdFence));
      const l = oracle.run(withFence(coordFence));
      const code = (x: OpResult | string) => (typeof x === 'string' ? x : x.type);
      expect([op.type, code(r)]).toEqual([op.type, code(l)]);
      return { r, l };
    };
    const acquire = (owner: string) =>
      both({ type: 'lock_acquire', namespace: 'locks', key: 'deploy', owner, ttlSeconds: 30 });
    const set = (value: number, e: number, c: number) =>
      both({ type: 'set', namespace: 'app', key: 'cfg', value }, e, c);

    // A lock that was never granted: every fence is stale.
    await set(0, 1, 1);
    const g1 = await acquire('old');
    const e1 = grantOf(g1.r as OpResult).fence;
    const c1 = grantOf(g1.l as OpResult).fence;
    expect((await set(1, e1, c1)).r).toMatchObject({ type: 'entry' });
    await set(2, e1 + 1_000_000, c1 + 1_000_000); // never granted: invalid_argument on both
    // The holder's TTL runs out: with no newer holder its fence still passes.
    clock.advance(31_000);
    expect((await set(3, e1, c1)).r).toMatchObject({ type: 'entry' });
    const g2 = await acquire('new');
    const e2 = grantOf(g2.r as OpResult).fence;
    expect(e2).toBeGreaterThan(e1);
    const stale = await set(4, e1, c1);
    expect(stale.r).toBe('fence_stale');
    const err = await b
      .write({ type: 'delete', namespace: 'app', key: 'cfg', fence: { namespace: 'locks', key: 'deploy', token: e1 } })
      .catch((x) => x);
    expect(err).toMatchObject({ code: 'fence_stale', details: { lock: 'locks/deploy', fence: e1, current: e2 } });
    // Nothing was written by the refused calls.
    expect(await b.read({ type: 'get', namespace: 'app', key: 'cfg' })).toMatchObject({ entry: { value: 3 } });
    await both({ type: 'delete', namespace: 'app', key: 'cfg' }, e2, grantOf(g2.l as OpResult).fence);
    expect(await codeOf(b.read({ type: 'get', namespace: 'app', key: 'cfg' }))).toBe('key_not_found');
  });

  it('makes a fenced write’s transaction fail when a newer holder is granted between its read and its commit', async () => {
    const clock = new ManualClock();
    const b = backendOn(cluster, clock, 8);
    opened.push(b);
    const g = grantOf(await b.write({ type: 'lock_acquire', namespace: 'l', key: 'k', owner: 'a', ttlSeconds: 5 }));
    const lockKv = (await b.client.kv.range({ key: b.keys.lock('l', 'k') })).kvs[0];
    const compares = b.context.checkFence({ namespace: 'l', key: 'k', token: g.fence }, lockKv);
    clock.advance(6_000);
    grantOf(await b.write({ type: 'lock_acquire', namespace: 'l', key: 'k', owner: 'b' }));
    const out = await b.client.kv.txn({
      compare: compares,
      success: [{ request_put: { key: b.keys.entry('app', 'x'), value: Buffer.from('late') } }],
      failure: [],
    });
    expect(out.succeeded).toBe(false);
    expect((await b.client.kv.range({ key: b.keys.entry('app', 'x') })).kvs).toHaveLength(0);
  });
});
