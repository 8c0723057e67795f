/**
 * Fenced leases on a real 3-member etcd on loopback: coord's results and
 * codes (a seeded workload run side by side with coord's state machine),
 * guarded transitions, epochs that strictly increase across deletes and a
 * member's kill -9, and deadlines that an etcd leader change neither extends
 * nor resets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LeaseView, Operation, OpResult } from '@parley/coord';
import { SeededRandom, testSeed, withSeed } from '@parley/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EtcdBackend } from './backend.js';
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

const bin = etcdForTests("@parley/etcd's lease tests");
const seed = testSeed(20261132);
let cluster: EtcdCluster;
let dir: string;
const opened: EtcdBackend[] = [];

function backend(clock: { nowMs(): number }): EtcdBackend {
  const b = backendOn(cluster, clock, seed);
  opened.push(b);
  return b;
}

function leaseOf(r: OpResult | string): LeaseView {
  if (typeof r === 'string' || r.type !== 'lease') throw new Error(`expected a lease, got ${JSON.stringify(r)}`);
  return r.lease;
}

describe.skipIf(!bin)('leases on a 3-member etcd', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-etcd-leases-'));
    cluster = await EtcdCluster.start(bin as string, dir);
  }, 60_000);

  afterAll(async () => {
    for (const b of opened) await b.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives the results and codes of coord on a seeded workload (acquire, renew, write, release, cooperative, attach, get, time)', async () => {
    await withSeed(seed, async () => {
      const clock = new ManualClock();
      const b = backend(clock);
      const oracle = new CoordOracle(clock);
      const rnd = new SeededRandom(seed);
      const etcdRanks = new TokenRanks();
      const coordRanks = new TokenRanks();
      const pick = <T>(xs: T[]): T => xs[rnd.nextU32() % xs.length] as T;
      let highestRank = 0;
      for (let step = 0; step < 100; step++) {
        const roll = rnd.nextU32() % 100;
        const key = pick(['job', 'run/1']);
        const holder = pick(['h1', 'h2']);
        const rank = 1 + (rnd.nextU32() % (highestRank + 1));
        let op: Operation;
        let sendRank = false;
        if (roll < 10) {
          clock.advance(pick([300, 1_500, 3_000]));
          continue;
        } else if (roll < 35) {
          op = { type: 'lease_acquire', namespace: 'ls', key, holder, ttlSeconds: pick([1, 2, 3]) };
          if (rnd.nextU32() % 3 === 0) op.state = { step };
          if (rnd.nextU32() % 5 === 0) op.stealIfExpired = false;
        } else if (roll < 47) {
          op = { type: 'lease_renew', namespace: 'ls', key, holder, epoch: 0, ttlSeconds: pick([1, 2]) };
          sendRank = true;
        } else if (roll < 57) {
          op = { type: 'lease_write', namespace: 'ls', key, holder, epoch: 0, state: { w: step } };
          sendRank = true;
        } else if (roll < 67) {
          op = { type: 'lease_release', namespace: 'ls', key, holder, epoch: 0 };
          if (rnd.nextU32() % 2 === 0) op.state = { done: step };
          sendRank = true;
        } else if (roll < 75) {
          op = { type: 'lease_cooperative_write', namespace: 'ls', key, state: { coop: step } };
        } else if (roll < 87) {
          op = { type: 'lease_attach', namespace: 'ls', key, holder };
        } else if (roll < 95) {
          op = { type: 'get', namespace: 'ls', key };
        } else {
          op = { type: 'set', namespace: 'ls', key, value: step };
        }
        const etcdOp = sendRank ? { ...op, epoch: etcdRanks.tokenOf(rank) } : op;
        const coordOp = sendRank ? { ...op, epoch: coordRanks.tokenOf(rank) } : op;
        const remote = await runOn(b, etcdOp as Operation);
        const local = oracle.run(coordOp as Operation);
        expect({ step, op, result: normalized(remote, etcdRanks) }).toEqual({
          step,
          op,
          result: normalized(local, coordRanks),
        });
        if (typeof remote !== 'string' && remote.type === 'lease' && remote.lease.epoch > 0) {
          highestRank = Math.max(highestRank, etcdRanks.rank(remote.lease.epoch));
        }
      }
      expect(highestRank).toBeGreaterThan(3);
    });
  });

  it('guards state transitions with ifVersion and ifNotExists, and refuses a stale epoch with lease_lost', async () => {
    const clock = new ManualClock();
    const b = backend(clock);
    const coop = leaseOf(
      await runOn(b, { type: 'lease_cooperative_write', namespace: 'g', key: 'k', state: 1, ifNotExists: true }),
    );
    expect(coop).toMatchObject({ epoch: 0, holder: null, state: 1, ttlSeconds: 3600 });
    expect(
      await runOn(b, { type: 'lease_cooperative_write', namespace: 'g', key: 'k', state: 2, ifNotExists: true }),
    ).toBe('key_already_exists');
    const a = leaseOf(
      await runOn(b, {
        type: 'lease_acquire',
        namespace: 'g',
        key: 'k',
        holder: 'h',
        ttlSeconds: 5,
        state: 2,
        ifVersion: coop.version,
      }),
    );
    expect(a).toMatchObject({ holder: 'h', state: 2, deadlineAt: clock.ms + 5_000 });
    expect(a.epoch).toBeGreaterThan(0);
    expect(
      await runOn(b, {
        type: 'lease_acquire',
        namespace: 'g',
        key: 'k',
        holder: 'h',
        ttlSeconds: 5,
        ifVersion: coop.version,
      }),
    ).toBe('version_mismatch');
    expect(
      await runOn(b, {
        type: 'lease_write',
        namespace: 'g',
        key: 'k',
        holder: 'h',
        epoch: a.epoch,
        state: 3,
        ifVersion: coop.version,
      }),
    ).toBe('version_mismatch');
    const w = leaseOf(
      await runOn(b, {
        type: 'lease_write',
        namespace: 'g',
        key: 'k',
        holder: 'h',
        epoch: a.epoch,
        state: 3,
        ifVersion: a.version,
      }),
    );
    expect(w).toMatchObject({ state: 3, epoch: a.epoch, deadlineAt: a.deadlineAt });
    const err = await b
      .write({ type: 'lease_renew', namespace: 'g', key: 'k', holder: 'h', epoch: a.epoch - 1, ttlSeconds: 5 })
      .catch((e) => e);
    expect(err).toMatchObject({
      code: 'lease_lost',
      details: { key: 'g/k', epoch: a.epoch - 1, currentEpoch: a.epoch },
    });
    expect(await runOn(b, { type: 'lease_release', namespace: 'g', key: 'k', holder: 'other', epoch: a.epoch })).toBe(
      'lease_lost',
    );
    expect(await runOn(b, { type: 'set', namespace: 'g', key: 'k', value: 1 })).toBe('invalid_argument');
    await b.write({ type: 'set', namespace: 'g', key: 'plain', value: 1 });
    expect(await runOn(b, { type: 'lease_acquire', namespace: 'g', key: 'plain', holder: 'h', ttlSeconds: 5 })).toBe(
      'invalid_argument',
    );
    expect(
      await runOn(b, { type: 'lease_renew', namespace: 'g', key: 'plain', holder: 'h', epoch: 1, ttlSeconds: 5 }),
    ).toBe('lease_lost');
  });

  it('applies a lease write once when its answer is lost after the commit, and rebuilds the answer (state from history)', async () => {
    const clock = new ManualClock();
    const b = backend(clock);
    await runOn(b, { type: 'lease_cooperative_write', namespace: 'x', key: 'k', state: { big: 'x'.repeat(70_000) } });
    const dropped = loseAnswers(b, 2);
    // Without a state in the operation, the answer's state comes from the entry as of the write's revision.
    const a = leaseOf(await runOn(b, { type: 'lease_acquire', namespace: 'x', key: 'k', holder: 'h', ttlSeconds: 5 }));
    expect(dropped()).toBe(1);
    const got = await b.read({ type: 'get', namespace: 'x', key: 'k' });
    expect(got).toMatchObject({ entry: { version: a.version, value: { epoch: a.epoch, holder: 'h' } } });
    expect((a.state as { big: string }).big).toHaveLength(70_000);
    const w = leaseOf(
      await runOn(b, { type: 'lease_write', namespace: 'x', key: 'k', holder: 'h', epoch: a.epoch, state: { n: 1 } }),
    );
    expect(dropped()).toBe(2);
    expect(w).toMatchObject({ epoch: a.epoch, state: { n: 1 } });
    expect(await b.read({ type: 'get', namespace: 'x', key: 'k' })).toMatchObject({ entry: { version: w.version } });
  });

  it('counts leases toward the namespace key bound, as coord does', async () => {
    const clock = new ManualClock();
    const b = backendOn(cluster, clock, seed, { limits: { maxKeysPerNamespace: 2 } });
    opened.push(b);
    const oracle = new CoordOracle(clock, { maxKeysPerNamespace: 2 });
    const ops: Operation[] = [
      { type: 'set', namespace: 'full', key: 'a', value: 1 },
      { type: 'lease_acquire', namespace: 'full', key: 'l', holder: 'h', ttlSeconds: 5 },
      { type: 'lease_acquire', namespace: 'full', key: 'm', holder: 'h', ttlSeconds: 5 },
      { type: 'lease_cooperative_write', namespace: 'full', key: 'n', state: 1 },
      { type: 'lease_renew', namespace: 'full', key: 'l', holder: 'h', epoch: 0, ttlSeconds: 5 },
    ];
    for (const op of ops) {
      const r = await runOn(b, op);
      const l = oracle.run(op);
      expect([op.type, typeof r === 'string' ? r : r.type]).toEqual([op.type, typeof l === 'string' ? l : l.type]);
    }
    expect(await runOn(b, { type: 'lease_acquire', namespace: 'full', key: 'm', holder: 'h', ttlSeconds: 5 })).toBe(
      'namespace_full',
    );
  });

  it('keeps epochs strictly increasing across releases, deletes and an etcd member’s SIGKILL', async () => {
    const b = backend({ nowMs: () => Date.now() });
    const epochs: number[] = [];
    const cycle = async (holder: string, drop: boolean) => {
      const l = leaseOf(await runOn(b, { type: 'lease_acquire', namespace: 'e', key: 'k', holder, ttlSeconds: 30 }));
      epochs.push(l.epoch);
      if (drop) await b.write({ type: 'delete', namespace: 'e', key: 'k' });
      else await b.write({ type: 'lease_release', namespace: 'e', key: 'k', holder, epoch: l.epoch });
    };
    for (let i = 0; i < 4; i++) await cycle(`a${i}`, i % 2 === 0);
    const victim = await cluster.leaderIndex();
    await cluster.kill(victim);
    for (let i = 0; i < 4; i++) await cycle(`b${i}`, i % 2 === 1);
    await cluster.restart(victim);
    for (let i = 0; i < 2; i++) await cycle(`c${i}`, false);
    for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThan(epochs[i - 1] as number);
  });

  it('ends a holder at its own deadline across an etcd leader change (no TTL reset, no extension)', async () => {
    const clock = new ManualClock();
    const b = backend(clock);
    const l = leaseOf(await runOn(b, { type: 'lease_acquire', namespace: 't', key: 'k', holder: 'h', ttlSeconds: 10 }));
    clock.advance(7_000);
    const leader = await cluster.leaderIndex();
    await cluster.kill(leader);
    await cluster.waitHealthy(30_000);
    clock.ms = l.deadlineAt - 1;
    expect(await runOn(b, { type: 'lease_attach', namespace: 't', key: 'k', holder: 'h' })).toMatchObject({
      type: 'lease',
      lease: { epoch: l.epoch },
    });
    expect(await codeOf(b.write({ type: 'lease_acquire', namespace: 't', key: 'k', holder: 'o', ttlSeconds: 5 }))).toBe(
      'lock_held',
    );
    clock.ms = l.deadlineAt;
    expect(await runOn(b, { type: 'lease_attach', namespace: 't', key: 'k', holder: 'h' })).toEqual({
      type: 'lease_absent',
    });
    const next = leaseOf(
      await runOn(b, { type: 'lease_acquire', namespace: 't', key: 'k', holder: 'o', ttlSeconds: 5 }),
    );
    expect(next.epoch).toBeGreaterThan(l.epoch);
    expect(
      await runOn(b, { type: 'lease_renew', namespace: 't', key: 'k', holder: 'h', epoch: l.epoch, ttlSeconds: 10 }),
    ).toBe('lease_lost');
    await cluster.restart(leader);
  });
});
