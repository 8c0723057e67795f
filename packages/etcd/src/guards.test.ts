/**
 * The etcd backend's guards: error mapping, a cleanup lease etcd no longer
 * knows, a write that keeps losing its compares, a closed backend, and the
 * list page byte bound. Against a real 3-member etcd on loopback; without
 * etcd: fails under CI=true, skips loudly elsewhere (the mapping test runs
 * anyway).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordStateMachine, type OpResult } from '@parley/coord';
import { isParleyError, ParleyError, SeededRandom } from '@parley/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdBackend, type EtcdBackendOptions } from './backend.js';
import { MAX_WRITE_ROUNDS, writeLoop } from './entries.js';
import { ETCD_MISSING, EtcdCluster, findEtcd } from './testing/etcd-cluster.js';
import { mapEtcdError } from './txn.js';

describe('etcd error mapping', () => {
  it('maps etcd and gRPC failures to typed errors, transient ones retryable within the call', () => {
    const cases: [Error, string, boolean][] = [
      [new Error('etcdserver: leader changed'), 'unavailable', true],
      [new Error('etcdserver: no leader'), 'unavailable', true],
      [new Error('etcdserver: request timed out'), 'unavailable', true],
      [new Error('14 UNAVAILABLE: No connection established'), 'unavailable', true],
      [new Error('mvcc: required revision has been compacted'), 'compacted', false],
      [new Error('etcdserver: request is too large'), 'value_too_large', false],
      [new Error('etcdserver: permission denied'), 'unauthorized', false],
      [new Error('something else entirely'), 'unavailable', false],
    ];
    for (const [err, code, transient] of cases) {
      const m = mapEtcdError(err);
      expect([err.message, m.error.code, m.transient]).toEqual([err.message, code, transient]);
      expect(m.error).toBeInstanceOf(ParleyError);
    }
    class ClientClosedError extends Error {}
    expect(mapEtcdError(new ClientClosedError('kv')).error.code).toBe('closed');
    const typed = new ParleyError('key_not_found', 'x');
    expect(mapEtcdError(typed)).toEqual({ error: typed, transient: false });
  });
});

const bin = findEtcd();
if (!bin) {
  if (process.env.CI === 'true') throw new Error(`CI needs etcd for @parley/etcd's tests.\n${ETCD_MISSING}`);
  console.error(`\n*** SKIPPING @parley/etcd guard tests: ${ETCD_MISSING}\n`);
}

describe.skipIf(!bin)('etcd backend guards', () => {
  let cluster: EtcdCluster;
  let dir: string;
  const backends: EtcdBackend[] = [];
  let n = 0;
  const backend = (extra: Partial<EtcdBackendOptions> = {}) => {
    const b = new EtcdBackend({
      endpoints: cluster.endpoints,
      prefix: `/g${++n}`,
      random: new SeededRandom(n),
      callTimeoutMs: 5_000,
      ...extra,
    });
    backends.push(b);
    return b;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-etcd-guards-'));
    cluster = await EtcdCluster.start(bin as string, dir);
  }, 60_000);

  afterAll(async () => {
    for (const b of backends) await b.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replaces a cleanup lease etcd no longer knows, and the write goes through', async () => {
    const b = backend();
    const first = (await b.write({ type: 'set', namespace: 'n', key: 'a', value: 1, ttlSeconds: 600 })) as Extract<
      OpResult,
      { type: 'entry' }
    >;
    const raw = await b.client.get(`${b.keys.prefix}/e/n/a`).exec();
    const leaseId = raw.kvs[0]?.lease as string;
    expect(leaseId).not.toBe('0');
    await b.client.leaseClient.leaseRevoke({ ID: leaseId }); // etcd forgets it (and deletes what it held)
    const granted = b.cleanup.granted;
    const again = await b.write({ type: 'set', namespace: 'n', key: 'b', value: 2, ttlSeconds: 600 });
    expect(again).toMatchObject({ type: 'entry', operation: 'created' });
    expect(b.cleanup.granted).toBeGreaterThan(granted);
    const rawB = await b.client.get(`${b.keys.prefix}/e/n/b`).exec();
    expect(rawB.kvs[0]?.lease).not.toBe(leaseId);
    expect(first.entry.value).toBe(1);
  });

  it('gives up with unavailable after MAX_WRITE_ROUNDS lost compares', async () => {
    const b = backend();
    const key = b.keys.entry('n', 'k');
    let rounds = 0;
    const err = await writeLoop(
      b.context,
      { deadlineMs: Date.now() + 20_000, waitMs: 0 },
      key,
      undefined,
      async () => {
        rounds++;
        return {
          compares: [{ key, target: 'Mod', result: 'Equal', mod_revision: 999_999_999 }],
          success: [{ request_put: { key, value: Buffer.from('x') } }],
          result: () => ({ type: 'noop' }),
          stored: null,
        };
      },
      () => ({ type: 'noop' }),
    ).catch((e: unknown) => e);
    expect(isParleyError(err, 'unavailable')).toBe(true);
    expect(rounds).toBe(MAX_WRITE_ROUNDS);
    expect((await b.client.get(`${b.keys.prefix}/e/n/k`).exec()).kvs).toHaveLength(0);
  }, 30_000);

  it('refuses calls once closed, with a retryable error', async () => {
    const b = backend();
    await b.write({ type: 'set', namespace: 'n', key: 'a', value: 1 });
    await b.close();
    await b.close(); // idempotent
    const err = await b.read({ type: 'get', namespace: 'n', key: 'a' }).catch((e: unknown) => e);
    expect(isParleyError(err) && err.retryable).toBe(true);
    expect(() => b.watch({ namespace: 'n' }, undefined, () => {})).toThrow(
      expect.objectContaining({ retryable: true }),
    );
    await expect(b.usage()).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('ends a list page before it passes maxListPageBytes, as coord does', async () => {
    const limits = { maxListPageBytes: 40 };
    const b = backend({ limits });
    const sm = new CoordStateMachine({ versionKey: 'k', limits });
    for (let i = 0; i < 5; i++) {
      const op = { type: 'set' as const, namespace: 'p', key: `k${i}`, value: 'v'.repeat(10 + i) };
      await b.write(op);
      sm.apply({ nowMs: Date.now(), op }, { index: i + 1, term: 1 });
    }
    const mine = (await b.read({ type: 'list', namespace: 'p' })) as Extract<OpResult, { type: 'list' }>;
    const theirs = sm.query({ type: 'list', namespace: 'p' }, Date.now());
    if (!theirs.ok || theirs.value.type !== 'list') throw new Error('coord list failed');
    expect(mine.items.map((e) => e.key)).toEqual(theirs.value.items.map((e) => e.key));
    expect(mine.items.length).toBeLessThan(5);
    expect(mine.nextCursor).toBe(theirs.value.nextCursor);
  });
});
