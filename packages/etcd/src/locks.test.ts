/**
 * Fenced locks on a real 3-member etcd on loopback: coord's results and
 * codes (a seeded workload run side by side with coord's state machine),
 * FIFO waits by create_revision, bounded waits that clean up, fences that
 * strictly increase across a member's kill -9, and deadlines that an etcd
 * leader change neither extends nor resets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockGrant, Operation, OpResult } from '@parley/coord';
import { DEFAULT_LIMITS } from '@parley/coord';
import { SeededRandom, testSeed, withSeed } from '@parley/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EtcdBackend } from './backend.js';
import { prefixEnd } from './keys.js';
import { MAX_LOCK_ROUNDS } from './lock-io.js';
import {
  decodeSlot,
  decodeWaiter,
  encodeSlot,
  encodeWaiter,
  lockState,
  type SlotRecord,
  type WaiterKv,
  type WaiterRecord,
} from './lock-records.js';
import { EtcdCluster } from './testing/etcd-cluster.js';
import {
  backendOn,
  CoordOracle,
  codeOf,
  etcdForTests,
  loseAnswers,
  ManualClock,
  normalized,
  runOn,
  TokenRanks,
} from './testing/lock-fixture.js';

const bin = etcdForTests("@parley/etcd's lock tests");
const seed = testSeed(20261131);
let cluster: EtcdCluster;
let dir: string;
const opened: EtcdBackend[] = [];

function backend(clock: { nowMs(): number } = { nowMs: () => Date.now() }, extra = {}): EtcdBackend {
  const b = backendOn(cluster, clock, seed, extra);
  opened.push(b);
  return b;
}

function grantOf(r: OpResult): LockGrant {
  if (r.type !== 'lock') throw new Error(`expected a grant, got ${JSON.stringify(r)}`);
  return r.lock;
}

/** Resolves once `pred` holds, polling every 25 ms; rejects after `timeoutMs`. */
async function eventually(pred: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function waiters(b: EtcdBackend, namespace: string, key: string): Promise<number> {
  const r = await b.read({ type: 'lock_inspect', namespace, key });
  return r.type === 'lock_info' ? r.lock.waiters : -1;
}

async function rawWaiterKeys(b: EtcdBackend, namespace: string, key: string): Promise<number> {
  const prefix = b.keys.lockWaiters(namespace, key);
  const res = await b.client.kv.range({ key: prefix, range_end: prefixEnd(prefix), count_only: true });
  return Number(res.count);
}

describe('lock records', () => {
  const slot: SlotRecord = {
    holder: { owner: 'o', fence: 9, acquiredAt: 1_000, expiresAt: 61_000, ttlSeconds: 60, metadata: { a: [1] } },
    lastFence: 9,
    freeSince: 500,
  };
  const waiter: WaiterRecord = {
    owner: 'w',
    ttlSeconds: 5,
    metadata: null,
    enqueuedAt: 2_000,
    waitDeadlineAt: 12_000,
    granted: null,
  };

  it('round-trip, and reject anything their encoders cannot produce with DecodeError', () => {
    expect(decodeSlot(encodeSlot(slot), 10_000)).toEqual(slot);
    expect(decodeWaiter(encodeWaiter(waiter), 10_000)).toEqual(waiter);
    const granted = { ...waiter, granted: { fence: 11, acquiredAt: 3_000 } };
    expect(decodeWaiter(encodeWaiter(granted), 10_000)).toEqual(granted);
    const bad = [
      '{"format":1}',
      JSON.stringify({ format: 2, holder: null, lastFence: 1, freeSince: 0 }),
      JSON.stringify({ format: 1, holder: null, lastFence: -1, freeSince: 0 }),
      JSON.stringify({ format: 1, holder: null, lastFence: 1, freeSince: 0, extra: 1 }),
      JSON.stringify({ format: 1, holder: { owner: '' }, lastFence: 1, freeSince: 0 }),
      JSON.stringify({ format: 1, holder: [], lastFence: 1, freeSince: 0 }),
      'not json',
      '[]',
    ];
    for (const text of bad) expect(() => decodeSlot(Buffer.from(text), 10_000)).toThrow(/lock slot|lock holder|record/);
    expect(() => decodeSlot(encodeSlot(slot), 20)).toThrow(/exceeds/);
    expect(() => decodeWaiter(Buffer.from(JSON.stringify({ ...waiter, format: 1, granted: 3 })), 10_000)).toThrow(
      /grant/,
    );
    expect(() => decodeWaiter(Buffer.from(JSON.stringify({ format: 1 })), 10_000)).toThrow(/lacks/);
  });

  it('judge holders, waits and idle slots by their own deadlines', () => {
    const w = (id: string, create: number, record: Partial<WaiterRecord>): WaiterKv => ({
      key: Buffer.from(id),
      id,
      createRevision: create,
      modRevision: create,
      record: { ...waiter, ...record },
    });
    const waiters = [
      w('stale', 5, { waitDeadlineAt: 2_500 }),
      w('spent', 6, { granted: { fence: 7, acquiredAt: 0 } }),
      w('mine', 7, { granted: { fence: 9, acquiredAt: 1_000 } }),
      w('live', 8, {}),
    ];
    const s = { revision: 10, slotKv: undefined, slot, waiters };
    const at = lockState(s, 3_000, DEFAULT_LIMITS);
    expect(at.holder?.owner).toBe('o');
    expect([at.live, at.stale, at.spent].map((xs) => xs.map((x) => x.id))).toEqual([['live'], ['stale'], ['spent']]);
    expect(lockState(s, 61_000, DEFAULT_LIMITS).holder).toBeNull();
    const day = DEFAULT_LIMITS.idleLockRetentionSeconds * 1000;
    const quiet = { ...s, waiters: [] };
    expect(lockState(quiet, 61_000 + day - 1, DEFAULT_LIMITS).lastFence).toBe(9);
    expect(lockState(quiet, 61_000 + day, DEFAULT_LIMITS).lastFence).toBe(0);
    // A waiter still waiting keeps the slot remembered.
    expect(
      lockState({ ...s, waiters: [w('late', 9, { waitDeadlineAt: 61_000 + day + 1 })] }, 61_000 + day, DEFAULT_LIMITS)
        .lastFence,
    ).toBe(9);
  });
});

describe.skipIf(!bin)('locks on a 3-member etcd', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-etcd-locks-'));
    cluster = await EtcdCluster.start(bin as string, dir);
  }, 60_000);

  afterAll(async () => {
    for (const b of opened) await b.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives the results and codes of coord on a seeded workload (acquire, renew, release, inspect, list, time)', async () => {
    await withSeed(seed, async () => {
      const clock = new ManualClock();
      const b = backend(clock);
      const oracle = new CoordOracle(clock);
      const rnd = new SeededRandom(seed);
      const etcdRanks = new TokenRanks();
      const coordRanks = new TokenRanks();
      const owners = ['w1', 'w2'];
      const keys = ['a', 'b/c'];
      /** Grants seen, by rank: the same rank names the same grant on both sides. */
      let highestRank = 0;
      const pick = <T>(xs: T[]): T => xs[rnd.nextU32() % xs.length] as T;
      for (let step = 0; step < 90; step++) {
        const roll = rnd.nextU32() % 100;
        const key = pick(keys);
        const owner = pick(owners);
        const rank = highestRank === 0 ? 1 : 1 + (rnd.nextU32() % (highestRank + 1));
        let op: Operation;
        let sendRank = false;
        if (roll < 10) {
          clock.advance(pick([200, 1_000, 2_500, 4_000]));
          continue;
        } else if (roll < 40) {
          op = { type: 'lock_acquire', namespace: 'wl', key, owner, ttlSeconds: pick([1, 2, 3]) };
          if (rnd.nextU32() % 4 === 0) op.metadata = { step };
        } else if (roll < 55) {
          op = { type: 'lock_renew', namespace: 'wl', key, owner, fence: 0 };
          if (rnd.nextU32() % 2 === 0) op.ttlSeconds = 2;
          sendRank = true;
        } else if (roll < 75) {
          op = { type: 'lock_release', namespace: 'wl', key, owner, fence: 0 };
          sendRank = true;
        } else if (roll < 92) {
          op = { type: 'lock_inspect', namespace: 'wl', key };
        } else {
          op = { type: 'lock_list', namespace: 'wl' };
        }
        const etcdOp = sendRank ? { ...op, fence: etcdRanks.tokenOf(rank) } : op;
        const coordOp = sendRank ? { ...op, fence: coordRanks.tokenOf(rank) } : op;
        const remote = await runOn(b, etcdOp as Operation);
        const local = oracle.run(coordOp as Operation);
        const nr = normalized(remote, etcdRanks);
        const nl = normalized(local, coordRanks);
        expect({ step, op, result: nr }).toEqual({ step, op, result: nl });
        if (typeof remote !== 'string' && remote.type === 'lock') {
          highestRank = Math.max(highestRank, etcdRanks.rank(remote.lock.fence));
        }
      }
      expect(highestRank).toBeGreaterThan(3);
    });
  });

  it('rejects bad arguments with coord’s codes, and enforces the waiter and slot bounds', async () => {
    const clock = new ManualClock();
    const b = backend(clock, { limits: { maxWaitersPerLock: 1, maxLocksPerNamespace: 2 } });
    const oracle = new CoordOracle(clock, { maxWaitersPerLock: 1, maxLocksPerNamespace: 2 });
    const ops: Operation[] = [
      { type: 'lock_acquire', namespace: 'bad/ns', key: 'k', owner: 'o' },
      { type: 'lock_acquire', namespace: 'n', key: '', owner: 'o' },
      { type: 'lock_acquire', namespace: 'n', key: 'k', owner: '' },
      { type: 'lock_acquire', namespace: 'n', key: 'k', owner: 'o', ttlSeconds: 0 },
      { type: 'lock_acquire', namespace: 'n', key: 'k', owner: 'o', ttlSeconds: 3601 },
      { type: 'lock_acquire', namespace: 'n', key: 'k', owner: 'o', waitSeconds: 3601 },
      { type: 'lock_acquire', namespace: 'n', key: 'k', owner: 'o', metadata: 'x'.repeat(16_384) },
      { type: 'lock_renew', namespace: 'n', key: 'k', owner: 'o', fence: 0 },
      { type: 'lock_release', namespace: 'n', key: 'k', owner: 'o', fence: -1 },
      { type: 'lock_inspect', namespace: '', key: 'k' },
      { type: 'lock_list', namespace: 'bad ns' },
      { type: 'lock_renew', namespace: 'n', key: 'k', owner: 'o', fence: 5 },
      { type: 'lock_release', namespace: 'n', key: 'k', owner: 'o', fence: 5 },
      { type: 'lock_acquire', namespace: 'n', key: 'k1', owner: 'o' },
      { type: 'lock_acquire', namespace: 'n', key: 'k2', owner: 'o' },
      { type: 'lock_acquire', namespace: 'n', key: 'k3', owner: 'o' },
    ];
    for (const op of ops) {
      const remote = await runOn(b, op);
      const local = oracle.run(op);
      expect([op, typeof remote === 'string' ? remote : remote.type]).toEqual([
        op,
        typeof local === 'string' ? local : local.type,
      ]);
    }
    // One waiter fits the queue (maxWaitersPerLock 1); the second is refused at once with lock_held.
    const first = b.write(
      { type: 'lock_acquire', namespace: 'n', key: 'k1', owner: 'q1', waitSeconds: 120 },
      { waitMs: 200_000 },
    );
    await eventually(async () => (await waiters(b, 'n', 'k1')) === 1, 10_000, 'first waiter queued');
    const started = Date.now();
    expect(
      await codeOf(
        b.write({ type: 'lock_acquire', namespace: 'n', key: 'k1', owner: 'q2', waitSeconds: 30 }, { waitMs: 30_000 }),
      ),
    ).toBe('lock_held');
    expect(Date.now() - started).toBeLessThan(5_000);
    // The holder's 60 s run out: the waiter takes the lock.
    clock.advance(61_000);
    expect(grantOf(await first).owner).toBe('q1');
    // Slots are forgotten a day after they are free: then a new slot fits again.
    clock.advance(61_000 + 86_400_000);
    expect(grantOf(await b.write({ type: 'lock_acquire', namespace: 'n', key: 'k3', owner: 'o' })).owner).toBe('o');
  });

  it('grants blocking waiters in FIFO order (create_revision), each with a larger fence', async () => {
    const b = backend();
    const holder = grantOf(
      await b.write({ type: 'lock_acquire', namespace: 'q', key: 'job', owner: 'h', ttlSeconds: 30 }),
    );
    const order: string[] = [];
    const waits: Promise<LockGrant>[] = [];
    for (const owner of ['w1', 'w2', 'w3']) {
      const n = waits.length;
      waits.push(
        b
          .write(
            { type: 'lock_acquire', namespace: 'q', key: 'job', owner, ttlSeconds: 30, waitSeconds: 20 },
            { waitMs: 20_000 },
          )
          .then((r) => {
            order.push(owner);
            return grantOf(r);
          }),
      );
      await eventually(async () => (await waiters(b, 'q', 'job')) === n + 1, 10_000, `${owner} queued`);
    }
    let previous = holder;
    await b.write({ type: 'lock_release', namespace: 'q', key: 'job', owner: 'h', fence: holder.fence });
    for (let i = 0; i < 3; i++) {
      const g = await (waits[i] as Promise<LockGrant>);
      expect(g.owner).toBe(`w${i + 1}`);
      expect(g.fence).toBeGreaterThan(previous.fence);
      const info = await b.read({ type: 'lock_inspect', namespace: 'q', key: 'job' });
      expect(info).toMatchObject({
        type: 'lock_info',
        lock: { holder: { owner: g.owner, fence: g.fence }, waiters: 2 - i },
      });
      expect(
        await b.write({ type: 'lock_release', namespace: 'q', key: 'job', owner: g.owner, fence: g.fence }),
      ).toEqual({
        type: 'lock_released',
        released: true,
      });
      previous = g;
    }
    expect(order).toEqual(['w1', 'w2', 'w3']);
    // Grant markers are removed by their waiters: nothing is left under the lock's waiter prefix.
    await eventually(async () => (await rawWaiterKeys(b, 'q', 'job')) === 0, 5_000, 'waiter keys removed');
  });

  it('hands an expired holder’s lock to the first waiter, and a waiter whose wait ends gets lock_held and leaves no key', async () => {
    const b = backend();
    const h = grantOf(await b.write({ type: 'lock_acquire', namespace: 'x', key: 'k', owner: 'h', ttlSeconds: 2 }));
    const t0 = Date.now();
    const waited = grantOf(
      await b.write(
        { type: 'lock_acquire', namespace: 'x', key: 'k', owner: 'w', ttlSeconds: 30, waitSeconds: 10 },
        { waitMs: 10_000 },
      ),
    );
    expect(waited.owner).toBe('w');
    expect(waited.fence).toBeGreaterThan(h.fence);
    expect(waited.acquiredAt).toBeGreaterThanOrEqual(h.expiresAt);
    expect(Date.now() - t0).toBeLessThan(6_000);

    const t1 = Date.now();
    const err = await b
      .write({ type: 'lock_acquire', namespace: 'x', key: 'k', owner: 'late', waitSeconds: 1 }, { waitMs: 1_000 })
      .catch((e) => e);
    expect(err).toMatchObject({ code: 'lock_held', details: { lock: 'x/k', owner: 'w', expiresAt: waited.expiresAt } });
    expect(Date.now() - t1).toBeGreaterThanOrEqual(900);
    expect(Date.now() - t1).toBeLessThan(5_000);
    expect(await rawWaiterKeys(b, 'x', 'k')).toBe(0);
    expect(await waiters(b, 'x', 'k')).toBe(0);
  });

  it('removes the waiter key of a wait whose call runs out of time before its wait ends', async () => {
    const b = backend();
    grantOf(await b.write({ type: 'lock_acquire', namespace: 'y', key: 'k', owner: 'h', ttlSeconds: 30 }));
    const t0 = Date.now();
    const code = await codeOf(
      b.write({ type: 'lock_acquire', namespace: 'y', key: 'k', owner: 'w', waitSeconds: 20 }, { timeoutMs: 1_500 }),
    );
    expect(code).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(3_000);
    await eventually(async () => (await rawWaiterKeys(b, 'y', 'k')) === 0, 3_000, 'abandoned waiter key removed');
  });

  it('applies an acquire, renew and release once when their answers are lost after the commit (request ids)', async () => {
    const b = backend();
    const dropped = loseAnswers(b, 3);
    const g = grantOf(await b.write({ type: 'lock_acquire', namespace: 'r', key: 'k', owner: 'o', ttlSeconds: 30 }));
    expect(dropped()).toBe(1);
    const renewed = grantOf(
      await b.write({ type: 'lock_renew', namespace: 'r', key: 'k', owner: 'o', fence: g.fence, ttlSeconds: 40 }),
    );
    expect(renewed).toMatchObject({ fence: g.fence, ttlSeconds: 40 });
    expect(await b.read({ type: 'lock_inspect', namespace: 'r', key: 'k' })).toMatchObject({
      lock: { holder: { owner: 'o', fence: g.fence, expiresAt: renewed.expiresAt }, lastFence: g.fence },
    });
    expect(await b.write({ type: 'lock_release', namespace: 'r', key: 'k', owner: 'o', fence: g.fence })).toEqual({
      type: 'lock_released',
      released: true,
    });
    expect(dropped()).toBe(3);
  });

  it('keeps mutual exclusion and grant-ordered fences among racing blocking acquirers', async () => {
    const b = backend();
    let inside = 0;
    let maxInside = 0;
    const grants: LockGrant[] = [];
    const worker = async (w: number) => {
      for (let round = 0; round < 3; round++) {
        const g = grantOf(
          await b.write(
            { type: 'lock_acquire', namespace: 'race', key: 'k', owner: `w${w}`, ttlSeconds: 30, waitSeconds: 30 },
            { waitMs: 30_000 },
          ),
        );
        inside++;
        maxInside = Math.max(maxInside, inside);
        grants.push(g);
        await new Promise((r) => setTimeout(r, 5));
        inside--;
        const released = await b.write({
          type: 'lock_release',
          namespace: 'race',
          key: 'k',
          owner: g.owner,
          fence: g.fence,
        });
        expect(released).toEqual({ type: 'lock_released', released: true });
      }
    };
    await Promise.all([0, 1, 2, 3, 4].map(worker));
    expect(maxInside).toBe(1);
    expect(grants).toHaveLength(15);
    for (let i = 1; i < grants.length; i++) {
      expect((grants[i] as LockGrant).fence).toBeGreaterThan((grants[i - 1] as LockGrant).fence);
    }
    await eventually(async () => (await rawWaiterKeys(b, 'race', 'k')) === 0, 5_000, 'no waiter keys left');
  });

  it('replaces a cleanup lease etcd no longer knows, and gives up with unavailable after MAX_LOCK_ROUNDS lost rounds', async () => {
    const b = backend();
    grantOf(await b.write({ type: 'lock_acquire', namespace: 'cl', key: 'a', owner: 'o', ttlSeconds: 30 }));
    const leaseId = (await b.client.kv.range({ key: b.keys.lock('cl', 'a') })).kvs[0]?.lease as string;
    expect(leaseId).not.toBe('0');
    await b.client.leaseClient.leaseRevoke({ ID: leaseId });
    const granted = b.cleanup.granted;
    grantOf(await b.write({ type: 'lock_acquire', namespace: 'cl', key: 'b', owner: 'o', ttlSeconds: 30 }));
    expect(b.cleanup.granted).toBeGreaterThan(granted);
    expect((await b.client.kv.range({ key: b.keys.lock('cl', 'b') })).kvs[0]?.lease).not.toBe(leaseId);

    // Every commit on lock cl/c loses its compares: the call ends after MAX_LOCK_ROUNDS rounds, retryable.
    const kv = b.client.kv;
    const original = kv.txn.bind(kv);
    const slotKey = b.keys.lock('cl', 'c');
    let lost = 0;
    kv.txn = async (req, options) => {
      if ((req.compare ?? []).some((c) => c.key?.equals(slotKey))) {
        lost++;
        return { header: { revision: '1' }, succeeded: false, responses: [] } as never;
      }
      return original(req, options);
    };
    expect(await codeOf(b.write({ type: 'lock_acquire', namespace: 'cl', key: 'c', owner: 'o' }))).toBe('unavailable');
    expect(lost).toBe(MAX_LOCK_ROUNDS);
    kv.txn = original;
  });

  it('keeps fences strictly increasing while etcd members are killed with SIGKILL and restarted', async () => {
    const b = backend();
    const fences: number[] = [];
    const grantRelease = async (owner: string) => {
      const g = grantOf(await b.write({ type: 'lock_acquire', namespace: 'f', key: 'k', owner, ttlSeconds: 30 }));
      fences.push(g.fence);
      await b.write({ type: 'lock_release', namespace: 'f', key: 'k', owner, fence: g.fence });
    };
    for (let i = 0; i < 3; i++) await grantRelease(`a${i}`);
    const leader = await cluster.leaderIndex();
    expect(leader).toBeGreaterThanOrEqual(0);
    await cluster.kill(leader);
    for (let i = 0; i < 3; i++) await grantRelease(`b${i}`);
    await cluster.restart(leader);
    const other = (leader + 1) % 3;
    await cluster.kill(other);
    for (let i = 0; i < 3; i++) await grantRelease(`c${i}`);
    await cluster.restart(other);
    for (let i = 0; i < 3; i++) await grantRelease(`d${i}`);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1] as number);
  });

  it('expires a holder at its own deadline across an etcd leader change (no TTL reset, no extension)', async () => {
    const clock = new ManualClock();
    const b = backend(clock);
    const g = grantOf(await b.write({ type: 'lock_acquire', namespace: 't', key: 'k', owner: 'h', ttlSeconds: 10 }));
    expect(g.expiresAt).toBe(clock.ms + 10_000);
    clock.advance(6_000);
    const leader = await cluster.leaderIndex();
    await cluster.kill(leader);
    await cluster.waitHealthy(30_000);
    expect(await cluster.leaderIndex()).not.toBe(leader);
    // 1 ms before the deadline the holder still holds; at the deadline it is gone, on every read and write.
    clock.ms = g.expiresAt - 1;
    expect(await b.read({ type: 'lock_inspect', namespace: 't', key: 'k' })).toMatchObject({
      lock: { holder: { owner: 'h', fence: g.fence } },
    });
    expect(await codeOf(b.write({ type: 'lock_acquire', namespace: 't', key: 'k', owner: 'o' }))).toBe('lock_held');
    clock.ms = g.expiresAt;
    expect(await b.read({ type: 'lock_inspect', namespace: 't', key: 'k' })).toMatchObject({
      lock: { holder: null, lastFence: g.fence },
    });
    // etcd still keeps the slot key (its cleanup lease outlives the deadline, and a leader change restarted it).
    expect((await b.client.kv.range({ key: b.keys.lock('t', 'k') })).kvs).toHaveLength(1);
    expect(await codeOf(b.write({ type: 'lock_renew', namespace: 't', key: 'k', owner: 'h', fence: g.fence }))).toBe(
      'lease_lost',
    );
    const next = grantOf(await b.write({ type: 'lock_acquire', namespace: 't', key: 'k', owner: 'o' }));
    expect(next.fence).toBeGreaterThan(g.fence);
    // The old holder's renew and release are refused by its stale fence.
    expect(
      await b.write({ type: 'lock_renew', namespace: 't', key: 'k', owner: 'h', fence: g.fence }).catch((e) => e),
    ).toMatchObject({
      code: 'fence_stale',
      details: { fence: g.fence, current: next.fence },
    });
    expect(await b.write({ type: 'lock_release', namespace: 't', key: 'k', owner: 'h', fence: g.fence })).toEqual({
      type: 'lock_released',
      released: false,
    });
    await cluster.restart(leader);
  });

  it('on the real clock, hands the lock to a waiter at the holder’s deadline although the etcd leader was killed mid-TTL', async () => {
    const b = backend();
    const h = grantOf(await b.write({ type: 'lock_acquire', namespace: 'rt', key: 'k', owner: 'h', ttlSeconds: 3 }));
    const waiting = b.write(
      { type: 'lock_acquire', namespace: 'rt', key: 'k', owner: 'w', ttlSeconds: 30, waitSeconds: 20 },
      { waitMs: 20_000 },
    );
    await eventually(async () => (await waiters(b, 'rt', 'k')) === 1, 5_000, 'waiter queued');
    const leader = await cluster.leaderIndex();
    await cluster.kill(leader);
    const g = grantOf(await waiting);
    // Granted no earlier than the holder's deadline, and not a TTL later (etcd's restarted leases play no part).
    expect(g.acquiredAt).toBeGreaterThanOrEqual(h.expiresAt);
    expect(g.acquiredAt - h.expiresAt).toBeLessThan(2_500);
    expect(g.fence).toBeGreaterThan(h.fence);
    await cluster.restart(leader);
  });

  it('fails a blocking acquire within its bound when etcd is unreachable, never hanging', async () => {
    const b = backendOn(cluster, { nowMs: () => Date.now() }, seed, {
      endpoints: ['http://127.0.0.1:9'],
      callTimeoutMs: 1_000,
      dialTimeoutMs: 300,
    });
    opened.push(b);
    const t0 = Date.now();
    const code = await codeOf(
      b.write({ type: 'lock_acquire', namespace: 'u', key: 'k', owner: 'o', waitSeconds: 1 }, { waitMs: 1_000 }),
    );
    expect(['unavailable', 'timeout']).toContain(code);
    expect(Date.now() - t0).toBeLessThan(2_000 + 1_500);
  });
});
