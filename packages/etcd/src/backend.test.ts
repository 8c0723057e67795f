/**
 * The etcd mapping of entries, claims, lists, namespaces and watches against
 * a real 3-member etcd on loopback. Without etcd: fails under CI=true, and
 * elsewhere says so loudly and skips.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordStateMachine, type Operation, type OpResult, type StrongChange } from '@parley/coord';
import { isParleyError, type ParleyError, SeededRandom, testSeed } from '@parley/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdBackend, type EtcdBackendOptions } from './backend.js';
import { ETCD_MISSING, EtcdCluster, findEtcd } from './testing/etcd-cluster.js';
import { revisionOf } from './version.js';

const bin = findEtcd();
if (!bin) {
  if (process.env.CI === 'true') throw new Error(`CI needs etcd for @parley/etcd's tests.\n${ETCD_MISSING}`);
  console.error(`\n*** SKIPPING @parley/etcd backend tests: ${ETCD_MISSING}\n`);
}

const seed = testSeed(20261130);
let cluster: EtcdCluster;
let dir: string;
let offsetMs = 0;
const clock = { nowMs: () => Date.now() + offsetMs };
const backends: EtcdBackend[] = [];
let prefixCounter = 0;

function backend(extra: Partial<EtcdBackendOptions> = {}): EtcdBackend {
  const b = new EtcdBackend({
    endpoints: cluster.endpoints,
    prefix: `/t${++prefixCounter}`,
    clock,
    random: new SeededRandom(seed + prefixCounter),
    callTimeoutMs: 5_000,
    ...extra,
  });
  backends.push(b);
  return b;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (isParleyError(err)) return err.code;
    throw err;
  }
}

/** Waits (bounded) until `pred` holds over the changes received so far. */
function until<T>(items: T[], pred: (items: T[]) => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      if (pred(items)) resolve();
      else if (Date.now() - started > timeoutMs) reject(new Error(`condition not met in ${timeoutMs} ms`));
      else setTimeout(tick, 20);
    };
    tick();
  });
}

describe.skipIf(!bin)('EtcdBackend on a 3-member etcd', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-etcd-'));
    cluster = await EtcdCluster.start(bin as string, dir);
  }, 60_000);

  afterAll(async () => {
    for (const b of backends) await b.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sets, reads, updates with CAS and deletes, with versions from mod_revision', async () => {
    const b = backend();
    const created = await b.write({ type: 'set', namespace: 'jobs', key: 'cfg/a', value: { pct: 25 } });
    expect(created).toMatchObject({
      type: 'entry',
      operation: 'created',
      entry: { kind: 'value', value: { pct: 25 } },
    });
    const e1 = (created as Extract<OpResult, { type: 'entry' }>).entry;
    expect(e1.version).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(e1.ttlSeconds).toBe(3600);
    expect(e1.expiresAt - e1.updatedAt).toBe(3_600_000);
    const raw = await b.client.get(`${b.keys.prefix}/e/jobs/cfg%2Fa`).exec();
    expect(revisionOf('jobs', 'cfg/a', e1.version)).toBe(Number(raw.kvs[0]?.mod_revision));

    const got = await b.read({ type: 'get', namespace: 'jobs', key: 'cfg/a' });
    expect(got).toEqual({ type: 'got', entry: e1 });

    const updated = await b.write({
      type: 'set',
      namespace: 'jobs',
      key: 'cfg/a',
      value: { pct: 50 },
      ifVersion: e1.version,
    });
    const e2 = (updated as Extract<OpResult, { type: 'entry' }>).entry;
    expect(updated).toMatchObject({ operation: 'updated' });
    expect(e2.createdAt).toBe(e1.createdAt);
    expect(e2.version).not.toBe(e1.version);

    // A stale version, a foreign token and a version of another key all mismatch, and change nothing.
    const other = await b.write({ type: 'set', namespace: 'jobs', key: 'other', value: 1 });
    const otherVersion = (other as Extract<OpResult, { type: 'entry' }>).entry.version;
    for (const ifVersion of [e1.version, 'not-a-version', otherVersion]) {
      const err = await b
        .write({ type: 'set', namespace: 'jobs', key: 'cfg/a', value: 0, ifVersion })
        .catch((e: ParleyError) => e);
      expect(err).toMatchObject({ code: 'version_mismatch', details: { actual: e2.version } });
    }
    expect(await codeOf(b.write({ type: 'set', namespace: 'jobs', key: 'cfg/a', value: 0, ifNotExists: true }))).toBe(
      'key_already_exists',
    );
    expect(await codeOf(b.write({ type: 'delete', namespace: 'jobs', key: 'cfg/a', ifVersion: e1.version }))).toBe(
      'version_mismatch',
    );
    expect(await b.write({ type: 'delete', namespace: 'jobs', key: 'cfg/a', ifVersion: e2.version })).toEqual({
      type: 'deleted',
      namespace: 'jobs',
      key: 'cfg/a',
    });
    expect(await codeOf(b.read({ type: 'get', namespace: 'jobs', key: 'cfg/a' }))).toBe('key_not_found');
    expect(await codeOf(b.write({ type: 'delete', namespace: 'jobs', key: 'cfg/a' }))).toBe('key_not_found');
    expect(await codeOf(b.write({ type: 'delete', namespace: 'jobs', key: 'cfg/a', ifVersion: e2.version }))).toBe(
      'version_mismatch',
    );
  });

  it('answers every operation with the same result shape and error code as coord (the built-in backend)', async () => {
    const b = backend();
    const sm = new CoordStateMachine({ versionKey: 'k' });
    let index = 0;
    const local = (op: Operation) => {
      const r =
        op.type === 'get' || op.type === 'list'
          ? sm.query(op, clock.nowMs())
          : sm.apply({ nowMs: clock.nowMs(), op }, { index: ++index, term: 1 }).result;
      return r.ok ? r.value.type : r.error.code;
    };
    const remote = async (op: Operation) => {
      try {
        const r = await (op.type === 'get' || op.type === 'list' ? b.read(op) : b.write(op));
        return r.type;
      } catch (err) {
        if (isParleyError(err)) return err.code;
        throw err;
      }
    };
    const big = 'x'.repeat(1_048_577);
    const ops: Operation[] = [
      { type: 'set', namespace: 'n', key: 'k', value: 1 },
      { type: 'set', namespace: 'n', key: 'k', value: big },
      { type: 'set', namespace: 'bad/ns', key: 'k', value: 1 },
      { type: 'set', namespace: 'n', key: '', value: 1 },
      { type: 'set', namespace: 'n', key: 'k\u0001', value: 1 },
      { type: 'set', namespace: 'n', key: 'k', value: 1, ttlSeconds: 0 },
      { type: 'set', namespace: 'n', key: 'k', value: 1, ttlSeconds: 30 * 86_400 + 1 },
      { type: 'set', namespace: 'n', key: 'k', value: 1, ifNotExists: true, ifVersion: 'v' },
      { type: 'set', namespace: 'n', key: 'k', value: 1, ifNotExists: true },
      { type: 'set', namespace: 'n', key: 'k', value: 1, fence: { namespace: 'locks', key: 'l', token: 1 } },
      { type: 'set', namespace: 'n', key: 'k', value: 1, fence: { namespace: 'locks', key: 'l', token: 0 } },
      { type: 'claim', namespace: 'n', key: 'c', value: { runId: 1 } },
      { type: 'claim', namespace: 'n', key: 'c', value: { runId: 2 } },
      { type: 'set', namespace: 'n', key: 'c', value: 1 },
      { type: 'delete', namespace: 'n', key: 'c' },
      { type: 'get', namespace: 'n', key: 'missing' },
      { type: 'list', namespace: 'n', limit: 0 },
      { type: 'list', namespace: 'n', filter: 'a ==' },
      { type: 'list', namespace: 'n', cursor: 'garbage' },
      { type: 'list', namespace: 'n', sortBy: 'created_at' },
      { type: 'delete_namespace', namespace: 'n', confirm: false },
      { type: 'delete_namespace', namespace: 'n', confirm: true, pattern: '' },
      { type: 'delete_namespace', namespace: 'n', confirm: true, pattern: 'k*' },
      { type: 'get', namespace: 'n', key: 'k' },
      { type: 'claim', namespace: 'n', key: 'c', value: 1, ttlSeconds: -1 },
    ];
    for (const op of ops) {
      expect([op.type, await remote(op)]).toEqual([op.type, local(op)]);
    }
    // Structurally wrong operations: invalid_argument, as the built-in backend refuses them before sending.
    const wrong = { type: 'set', namespace: 'n', key: 'k', value: 1, ttlSeconds: 1.5 } as Operation;
    expect(await codeOf(b.write(wrong))).toBe('invalid_argument');
    expect(await codeOf(b.read({ type: 'get', namespace: 'n' } as Operation))).toBe('invalid_argument');
    expect(await codeOf(b.write({ type: 'get', namespace: 'n', key: 'k' }))).toBe('invalid_argument');
  });

  it('claims once: racing claimers see one winner and its value', async () => {
    const b = backend();
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((runId) => b.write({ type: 'claim', namespace: 'd', key: 'etl', value: { runId } })),
    );
    const claims = results as Extract<OpResult, { type: 'claim' }>[];
    const winners = claims.filter((c) => c.won);
    expect(winners).toHaveLength(1);
    const w = winners[0] as Extract<OpResult, { type: 'claim' }>;
    expect(w.entry).toMatchObject({ kind: 'claim', ttlSeconds: 30 * 86_400 });
    for (const c of claims) expect([c.value, c.version]).toEqual([w.value, w.version]);
  });

  it('judges expiry by the deadline in the record: absent on reads and conditional writes, whatever etcd keeps', async () => {
    const b = backend();
    await b.write({ type: 'set', namespace: 'ttl', key: 'a', value: 1, ttlSeconds: 2 });
    await b.write({ type: 'claim', namespace: 'ttl', key: 'c', value: 1, ttlSeconds: 2 });
    offsetMs += 2_500; // the writer's and the reader's clock pass the deadline; etcd's lease has not run
    try {
      const raw = await b.client.get(`${b.keys.prefix}/e/ttl/a`).exec();
      expect(raw.kvs).toHaveLength(1); // still in etcd
      expect(await codeOf(b.read({ type: 'get', namespace: 'ttl', key: 'a' }))).toBe('key_not_found');
      expect(await b.read({ type: 'list', namespace: 'ttl' })).toEqual({ type: 'list', items: [], nextCursor: null });
      expect(await codeOf(b.write({ type: 'delete', namespace: 'ttl', key: 'a' }))).toBe('key_not_found');
      const again = await b.write({ type: 'set', namespace: 'ttl', key: 'a', value: 2, ifNotExists: true });
      expect(again).toMatchObject({ operation: 'created' });
      const reclaimed = await b.write({ type: 'claim', namespace: 'ttl', key: 'c', value: 2 });
      expect(reclaimed).toMatchObject({ won: true, value: 2 });
    } finally {
      offsetMs -= 2_500;
    }
  });

  it('applies a write once when the connection drops after the transaction was sent', async () => {
    const b = backend();
    const kv = b.client.kv;
    const original = kv.txn.bind(kv);
    let dropped = 0;
    kv.txn = async (req, options) => {
      const res = await original(req, options);
      if (dropped === 0 && (req.success ?? []).some((o) => o.request_put?.key?.toString().includes('/e/'))) {
        dropped++;
        throw new Error('14 UNAVAILABLE: Connection dropped');
      }
      return res;
    };
    try {
      const before = Number((await b.client.get('any').exec()).header.revision);
      const r = await b.write({ type: 'set', namespace: 'once', key: 'k', value: 7, ifNotExists: true });
      expect(dropped).toBe(1);
      expect(b.calls.retries).toBeGreaterThan(0);
      // The resent transaction found its request id: the first result, not key_already_exists.
      expect(r).toMatchObject({ type: 'entry', operation: 'created', entry: { value: 7 } });
      const raw = await b.client.get(`${b.keys.prefix}/e/once/k`).exec();
      const entry = (r as Extract<OpResult, { type: 'entry' }>).entry;
      expect(revisionOf('once', 'k', entry.version)).toBe(Number(raw.kvs[0]?.mod_revision));
      expect(Number(raw.kvs[0]?.version)).toBe(1); // written once
      expect(Number(raw.kvs[0]?.mod_revision)).toBeGreaterThan(before);
    } finally {
      kv.txn = original;
    }
  });

  it('fails with timeout or unavailable within the bound when etcd cannot be reached', async () => {
    const b = new EtcdBackend({ endpoints: ['http://127.0.0.1:1'], callTimeoutMs: 800, dialTimeoutMs: 200 });
    backends.push(b);
    const started = Date.now();
    const code = await codeOf(b.read({ type: 'get', namespace: 'n', key: 'k' }));
    expect(['timeout', 'unavailable']).toContain(code);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await codeOf(b.write({ type: 'set', namespace: 'n', key: 'k', value: 1 }, { timeoutMs: 300 }))).toMatch(
      /^(timeout|unavailable)$/,
    );
  });

  it('lists with q, filter, sort and cursors like coord, and deletes by pattern', async () => {
    const b = backend();
    const sm = new CoordStateMachine({ versionKey: 'k' });
    let index = 0;
    for (let i = 0; i < 30; i++) {
      const op: Operation = {
        type: 'set',
        namespace: 'l',
        key: `job/${String(i).padStart(2, '0')}`,
        value: { n: i, status: i % 3 === 0 ? 'done' : 'running' },
      };
      await b.write(op);
      sm.apply({ nowMs: 1000 + i, op }, { index: ++index, term: 1 });
    }
    const pageAll = async (run: (cursor?: string) => Promise<OpResult>) => {
      const keys: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 20; i++) {
        const r = (await run(cursor)) as Extract<OpResult, { type: 'list' }>;
        keys.push(...r.items.map((e) => e.key));
        if (r.nextCursor === null) break;
        cursor = r.nextCursor;
      }
      return keys;
    };
    const queries: Omit<Extract<Operation, { type: 'list' }>, 'type' | 'namespace'>[] = [
      { limit: 7 },
      { limit: 4, sortOrder: 'desc' },
      { limit: 5, sortBy: 'created_at', sortOrder: 'desc' },
      { limit: 3, filter: 'status = "done" and n >= 6' },
      { limit: 10, q: 'JOB/1' },
    ];
    for (const q of queries) {
      const etcdKeys = await pageAll((cursor) =>
        b.read({ type: 'list', namespace: 'l', ...q, ...(cursor ? { cursor } : {}) }),
      );
      const coordKeys = await pageAll(async (cursor) => {
        const r = sm.query({ type: 'list', namespace: 'l', ...q, ...(cursor ? { cursor } : {}) });
        if (!r.ok) throw new Error(r.error.message);
        return r.value;
      });
      expect(etcdKeys).toEqual(coordKeys);
      expect(etcdKeys.length).toBeGreaterThan(0);
    }
    const del = await b.write({ type: 'delete_namespace', namespace: 'l', confirm: true, pattern: 'job/1?' });
    expect(del).toEqual({ type: 'namespace_deleted', deleted_count: 10, namespace: 'l', pattern_used: 'job/1?' });
    expect(await b.usage()).toEqual([{ name: 'l', keys: 20, bytes: expect.any(Number) }]);
    const all = await b.write({ type: 'delete_namespace', namespace: 'l', confirm: true });
    expect(all).toMatchObject({ deleted_count: 20, pattern_used: '*' });
    expect(await b.usage()).toEqual([]);
  });

  it('bounds a namespace at maxKeysPerNamespace live keys, also under racing creates', async () => {
    const b = backend({ limits: { maxKeysPerNamespace: 5 } });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => codeOf(b.write({ type: 'set', namespace: 'f', key: `k${i}`, value: i }))),
    );
    expect(results.filter((r) => r === 'ok')).toHaveLength(5);
    expect(results.filter((r) => r !== 'ok').every((r) => r === 'namespace_full')).toBe(true);
    // Updates of existing keys still pass; a claim of a new key does not.
    const existing = results.indexOf('ok');
    expect(await codeOf(b.write({ type: 'set', namespace: 'f', key: `k${existing}`, value: 'x' }))).toBe('ok');
    expect(await codeOf(b.write({ type: 'claim', namespace: 'f', key: 'new', value: 1 }))).toBe('namespace_full');
  });

  it('a watch on a backend that has seen no revision yet still delivers the write made right after it', async () => {
    // The watcher reaches etcd a round trip or more after watch() returns; started at etcd's head by
    // then, it would miss these writes. The start point is learned first, and the writes wait for it.
    const b = backend();
    await b.write({ type: 'set', namespace: 'other', key: 'k', value: 0 }); // the cleanup lease, granted
    b.calls.lastRevision = 0; // as if no answer had carried a revision yet
    const seen: StrongChange[] = [];
    const stop = b.watch({ namespace: 'fresh' }, undefined, (c) => seen.push(c));
    const keys = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    await Promise.all(keys.map((key, i) => b.write({ type: 'set', namespace: 'fresh', key, value: i })));
    await until(seen, (s) => s.length >= keys.length, 5_000);
    stop();
    expect(seen.map((c) => c.key).sort()).toEqual(keys);
  });

  it('watches sets and deletes at etcd revisions, replays from a revision, and reports cleanup as expire', async () => {
    const b = backend();
    // "From now on" means after every change this process was told of (whichever member serves the
    // watch): a change acknowledged before is not delivered, one past what it has seen is.
    await b.write({ type: 'set', namespace: 'w', key: 'a/0', value: 0 });
    const seenUpTo = b.calls.lastRevision;
    await b.write({ type: 'set', namespace: 'w', key: 'a/00', value: 0 });
    b.calls.lastRevision = seenUpTo; // as if this process had not heard of a/00 yet
    const seen: StrongChange[] = [];
    const stop = b.watch({ namespace: 'w', prefix: 'a/' }, undefined, (c) => seen.push(c));
    const s1 = (await b.write({ type: 'set', namespace: 'w', key: 'a/1', value: 1 })) as Extract<
      OpResult,
      { type: 'entry' }
    >;
    await b.write({ type: 'set', namespace: 'w', key: 'b/1', value: 1 }); // outside the prefix
    await b.write({ type: 'set', namespace: 'w2', key: 'a/1', value: 1 }); // another namespace
    await b.write({ type: 'delete', namespace: 'w', key: 'a/1' });
    await b.write({ type: 'set', namespace: 'w', key: 'a/ttl', value: 'short', ttlSeconds: 1 });
    await until(seen, (s) => s.some((c) => c.type === 'expire'), 15_000);
    stop();
    expect(seen.map((c) => [c.type, c.key])).toEqual([
      ['set', 'a/00'],
      ['set', 'a/1'],
      ['delete', 'a/1'],
      ['set', 'a/ttl'],
      ['expire', 'a/ttl'],
    ]);
    seen.shift();
    expect(seen[0]?.entry).toEqual(s1.entry);
    expect(revisionOf('w', 'a/1', s1.entry.version)).toBe(seen[0]?.revision);
    const revisions = seen.map((c) => c.revision);
    expect([...revisions].sort((x, y) => x - y)).toEqual(revisions);
    expect(seen[3]?.entry?.value).toBe('short');

    // Resume after the first change: the rest is replayed from etcd's history.
    const replay: StrongChange[] = [];
    const stop2 = b.watch({ namespace: 'w', prefix: 'a/' }, seen[0]?.revision, (c) => replay.push(c));
    await until(replay, (r) => r.length >= 3, 5_000);
    stop2();
    expect(replay.map((c) => c.revision)).toEqual(revisions.slice(1));
    expect(replay.map((c) => c.type)).toEqual(['delete', 'set', 'expire']);
  }, 30_000);

  it("labels a replayed delete by what happened at its revision, not by the entry's deadline at replay", async () => {
    const b = backend();
    const before = (await b.write({ type: 'set', namespace: 'rd', key: 'start', value: 0 })) as Extract<
      OpResult,
      { type: 'entry' }
    >;
    const from = revisionOf('rd', 'start', before.entry.version) as number;
    await b.write({ type: 'set', namespace: 'rd', key: 'a', value: 1, ttlSeconds: 30 });
    await b.write({ type: 'delete', namespace: 'rd', key: 'a' });
    await b.write({ type: 'set', namespace: 'rd', key: 'n1', value: 1, ttlSeconds: 30 });
    await b.write({ type: 'set', namespace: 'rd', key: 'n2', value: 2, ttlSeconds: 30 });
    await b.write({ type: 'delete_namespace', namespace: 'rd', confirm: true, pattern: 'n*' });
    offsetMs = 31_000; // the replay runs after every deadline above
    try {
      const replay: StrongChange[] = [];
      const stop = b.watch({ namespace: 'rd' }, from, (c) => replay.push(c));
      await until(replay, (r) => r.length >= 6, 5_000);
      stop();
      expect(replay.map((c) => [c.type, c.key])).toEqual([
        ['set', 'a'],
        ['delete', 'a'],
        ['set', 'n1'],
        ['set', 'n2'],
        ['delete', 'n1'],
        ['delete', 'n2'],
      ]);
    } finally {
      offsetMs = 0;
    }
  }, 20_000);

  it('matches a watch prefix that ends in a high surrogate as the built-in backend does (startsWith)', async () => {
    const b = backend();
    const seen: StrongChange[] = [];
    const stop = b.watch({ namespace: 'hs', prefix: 'p\ud83d' }, undefined, (c) => seen.push(c));
    for (const key of ['p', 'pz', 'p😀', 'p\ud83dz', 'q😀', 'p\ud83d']) {
      await b.write({ type: 'set', namespace: 'hs', key, value: key });
    }
    await until(seen, (s) => s.length >= 3, 5_000);
    stop();
    expect(seen.map((c) => c.key)).toEqual(['p😀', 'p\ud83dz', 'p\ud83d']);
    expect(seen.map((c) => c.key).every((k) => k.startsWith('p\ud83d'))).toBe(true);
  }, 20_000);

  it('reports compacted history: the watch ends with compacted (never resumes at the head), then compacted at once', async () => {
    const b = backend();
    const r = (await b.write({ type: 'set', namespace: 'c', key: 'k', value: 1 })) as Extract<
      OpResult,
      { type: 'entry' }
    >;
    const rev = revisionOf('c', 'k', r.entry.version) as number;
    await b.write({ type: 'set', namespace: 'c', key: 'k', value: 2 });
    const head = Number((await b.client.get('x').exec()).header.revision);
    await b.client.kv.compact({ revision: head, physical: true });
    const seen: StrongChange[] = [];
    const ended: string[] = [];
    const stop = b.watch(
      { namespace: 'c' },
      rev - 1,
      (c) => seen.push(c),
      (err) => ended.push(err.code),
    );
    await until(ended, (e) => e.length > 0, 5_000);
    await b.write({ type: 'set', namespace: 'c', key: 'k', value: 3 });
    await new Promise((res) => setTimeout(res, 400)); // the old code re-watched at the head within 200 ms
    stop();
    expect(ended).toEqual(['compacted']);
    expect(seen).toEqual([]);
    expect(() => b.watch({ namespace: 'c' }, rev - 1, () => {})).toThrow(
      expect.objectContaining({ code: 'compacted' }),
    );
  }, 20_000);

  it('keeps deadlines across an etcd leader change (no reset, no extension)', async () => {
    const b = backend();
    const r = (await b.write({ type: 'set', namespace: 'lc', key: 'k', value: 1, ttlSeconds: 5 })) as Extract<
      OpResult,
      { type: 'entry' }
    >;
    const leader = await cluster.leaderIndex();
    expect(leader).toBeGreaterThanOrEqual(0);
    await cluster.kill(leader);
    try {
      const got = (await b.read({ type: 'get', namespace: 'lc', key: 'k' }, { timeoutMs: 15_000 })) as Extract<
        OpResult,
        { type: 'got' }
      >;
      expect(got.entry.expiresAt).toBe(r.entry.expiresAt);
      offsetMs += r.entry.expiresAt - clock.nowMs() + 1;
      expect(await codeOf(b.read({ type: 'get', namespace: 'lc', key: 'k' }, { timeoutMs: 15_000 }))).toBe(
        'key_not_found',
      );
    } finally {
      offsetMs = 0;
      await cluster.restart(leader);
    }
  }, 60_000);
  it("serializable reads are etcd's: answered by a member without a quorum; bounded staleness is refused", async () => {
    const b = backend({ prefix: '/serializable' });
    await b.write({ type: 'set', namespace: 'sr', key: 'k', value: 'v' });
    const serializable = { consistency: { level: 'serializable' as const } };
    const got = (await b.read({ type: 'get', namespace: 'sr', key: 'k' }, serializable)) as Extract<
      OpResult,
      { type: 'got' }
    >;
    expect(got.entry.value).toBe('v');
    const bounded = { consistency: { level: 'bounded' as const, maxStalenessMs: 100, maxLagEntries: 0 } };
    const refused = await b.read({ type: 'get', namespace: 'sr', key: 'k' }, bounded).catch((e: unknown) => e);
    expect(isParleyError(refused, 'invalid_argument')).toBe(true);
    expect((refused as { details: { unsupported?: string } }).details.unsupported).toBe('bounded');
    // Member 2 has applied the write (a serializable read there may lag until it has).
    const viaTwo = backend({ prefix: '/serializable', endpoints: [cluster.endpoints[2] as string] });
    const seen: unknown[] = [];
    const poll = setInterval(() => {
      viaTwo.read({ type: 'get', namespace: 'sr', key: 'k' }, serializable).then(
        () => seen.push(1),
        () => {},
      );
    }, 20);
    await until(seen, (xs) => xs.length > 0, 5_000).finally(() => clearInterval(poll));
    // Two of three members down: no quorum. A client of the third reads serializably; a quorum read cannot.
    const killed = [0, 1];
    for (const i of killed) await cluster.kill(i);
    try {
      const lone = backend({
        prefix: '/serializable',
        endpoints: [cluster.endpoints[2] as string],
        callTimeoutMs: 1_500,
      });
      const page = (await lone.read({ type: 'list', namespace: 'sr' }, serializable)) as Extract<
        OpResult,
        { type: 'list' }
      >;
      expect(page.items.map((e) => e.value)).toEqual(['v']);
      expect(await codeOf(lone.read({ type: 'get', namespace: 'sr', key: 'k' }, serializable))).toBe('ok');
      expect(await codeOf(lone.read({ type: 'get', namespace: 'sr', key: 'k' }))).toMatch(/^(timeout|unavailable)$/);
    } finally {
      for (const i of killed) await cluster.restart(i);
    }
  }, 90_000);
});
