/**
 * Lists, usage and namespace deletes on a real etcd: what they read (bytes
 * of keys and values etcd returned, EtcdCalls.bytesRead) and that paging in
 * etcd keeps coord's list grammar (q, filter, sort, cursor, page bytes,
 * expiry) exactly, over keys whose etcd order is not coord's order.
 * Without etcd: fails under CI=true, and elsewhere says so loudly and skips.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CoordLimits } from '@parley/coord';
import { CoordStateMachine, type Operation, type OpResult } from '@parley/coord';
import { SeededRandom, testSeed, withSeed } from '@parley/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdBackend } from './backend.js';
import { ETCD_MISSING, EtcdCluster, findEtcd } from './testing/etcd-cluster.js';

const bin = findEtcd();
if (!bin) {
  if (process.env.CI === 'true') throw new Error(`CI needs etcd for @parley/etcd's tests.\n${ETCD_MISSING}`);
  console.error(`\n*** SKIPPING @parley/etcd list tests: ${ETCD_MISSING}\n`);
}

let cluster: EtcdCluster;
let dir: string;
const backends: EtcdBackend[] = [];
let prefixCounter = 0;
let nowMs = 1_800_000_000_000;
const clock = { nowMs: () => nowMs };

function backend(limits: Partial<CoordLimits> = {}): EtcdBackend {
  const b = new EtcdBackend({
    endpoints: cluster.endpoints,
    prefix: `/list${++prefixCounter}`,
    clock,
    random: new SeededRandom(7 + prefixCounter),
    callTimeoutMs: 10_000,
    limits,
  });
  backends.push(b);
  return b;
}

type ListOp = Extract<Operation, { type: 'list' }>;
type ListResult = Extract<OpResult, { type: 'list' }>;

/** Bytes of keys and values etcd returned to `run`. */
async function bytesOf<T>(b: EtcdBackend, run: () => Promise<T>): Promise<{ bytes: number; result: T }> {
  const before = b.calls.bytesRead;
  const result = await run();
  return { bytes: b.calls.bytesRead - before, result };
}

describe.skipIf(!bin)('lists on etcd', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-etcd-list-'));
    cluster = await EtcdCluster.start(bin as string, dir, { members: 1 });
  }, 60_000);

  afterAll(async () => {
    for (const b of backends) await b.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the namespace keys and the page, not every value, for a key-sorted page', async () => {
    const b = backend({ maxKeysPerNamespace: 400 });
    const KEYS = 200;
    const pad = 'v'.repeat(4_000);
    for (let i = 0; i < KEYS; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          b.write({
            type: 'set',
            namespace: 'big',
            key: `job/${String(i + j).padStart(3, '0')}`,
            value: { n: i + j, rare: (i + j) % 50 === 3, pad },
          }),
        ),
      );
    }
    const valueBytes = KEYS * pad.length; // 800 KB of values in the namespace
    const keyBytes = KEYS * 64; // generously: the keys-only index
    const small = keyBytes + 8 * (pad.length + 200); // the index and a few records
    const list = (extra: Omit<ListOp, 'type' | 'namespace'>) => () =>
      b.read({ type: 'list', namespace: 'big', ...extra }) as Promise<ListResult>;

    const first = await bytesOf(b, list({ limit: 1 }));
    expect(first.result.items.map((e) => e.key)).toEqual(['job/000']);
    expect(first.bytes).toBeLessThan(small);
    expect(first.bytes).toBeLessThan(valueBytes / 10);

    const next = await bytesOf(b, list({ limit: 2, cursor: first.result.nextCursor as string }));
    expect(next.result.items.map((e) => e.key)).toEqual(['job/001', 'job/002']);
    expect(next.bytes).toBeLessThan(small);

    const desc = await bytesOf(b, list({ limit: 1, sortOrder: 'desc' }));
    expect(desc.result.items.map((e) => e.key)).toEqual(['job/199']);
    expect(desc.bytes).toBeLessThan(small);

    const q = await bytesOf(b, list({ limit: 1, q: '/15' }));
    expect(q.result.items.map((e) => e.key)).toEqual(['job/150']);
    expect(q.bytes).toBeLessThan(small);

    // A filter reads records in key order until the page and one more match are found (keys 3, 53).
    const filtered = await bytesOf(b, list({ limit: 1, filter: 'rare = true' }));
    expect(filtered.result.items.map((e) => e.key)).toEqual(['job/003']);
    expect(filtered.bytes).toBeLessThan(keyBytes + 80 * (pad.length + 200));

    // A create near the key bound counts keys, and reads records only when the raw count reaches it.
    nowMs += 1_000;
    const create = await bytesOf(b, () => b.write({ type: 'set', namespace: 'big', key: 'new', value: 1 }));
    expect(create.bytes).toBeLessThan(small);

    // deleteNamespace reads the records of the keys its pattern matches.
    const del = await bytesOf(b, () =>
      b.write({ type: 'delete_namespace', namespace: 'big', confirm: true, pattern: 'job/04?' }),
    );
    expect(del.result).toMatchObject({ deleted_count: 10 });
    expect(del.bytes).toBeLessThan(keyBytes + 12 * (pad.length + 200));

    // A time sort needs every record's time (a chunk at a time); usage needs every record's deadline and size.
    const byTime = await bytesOf(b, list({ limit: 1, sortBy: 'updated_at', sortOrder: 'desc' }));
    expect(byTime.result.items.map((e) => e.key)).toEqual(['new']);
    expect((await b.usage()).find((u) => u.name === 'big')).toMatchObject({ keys: 191 });
  }, 60_000);

  it('pages exactly as coord does, over keys etcd orders differently, expiry, ties and page bytes', async () => {
    const seed = testSeed(20261201);
    await withSeed(seed, async () => {
      const limits: Partial<CoordLimits> = { maxListPageBytes: 120 };
      const b = backend(limits);
      const sm = new CoordStateMachine({ versionKey: 'k', limits });
      const random = new SeededRandom(seed);
      // '/' and '%' are escaped (%2F, %25), U+1F600 is a surrogate pair (after U+E000 in UTF-8, before it in UTF-16).
      const alphabet = ['a', 'B', '/', '%', '.', '0', '~', '-', ' ', 'é', '\u{1F600}', '\uE000', '\uFFFD', 'a/'];
      const keyOf = () => {
        let k = '';
        for (let n = 1 + random.int(4); n > 0; n--) k += alphabet[random.int(alphabet.length)];
        return k;
      };
      let index = 0;
      const start = nowMs;
      const apply = async (op: Operation) => {
        let etcdResult: unknown;
        try {
          etcdResult = await b.write(op);
        } catch (err) {
          etcdResult = (err as { code?: string }).code;
        }
        const r = sm.apply({ nowMs, op }, { index: ++index, term: 1 });
        expect(typeof etcdResult === 'string' ? etcdResult : 'ok').toBe(r.result.ok ? 'ok' : r.result.error.code);
      };
      for (let i = 0; i < 90; i++) {
        if (random.int(3) === 0) nowMs += 1 + random.int(3); // ties in created_at / updated_at otherwise
        const short = random.int(6) === 0;
        await apply({
          type: 'set',
          namespace: 'p',
          key: keyOf(),
          value: { n: random.int(10), tag: random.int(2) === 0 ? 'x' : 'y', pad: 'p'.repeat(random.int(60)) },
          ttlSeconds: short ? 1 : 3600,
        });
      }
      nowMs = start + 3_000; // the short ones are now past their deadline (within coord's time step)
      const queries: Omit<ListOp, 'type' | 'namespace'>[] = [];
      for (const sortBy of ['key', 'created_at', 'updated_at'] as const) {
        for (const sortOrder of ['asc', 'desc'] as const) {
          queries.push({ sortBy, sortOrder, limit: 1 + random.int(4) });
          queries.push({ sortBy, sortOrder, limit: 3, filter: 'tag = "x" and n >= 3' });
          queries.push({ sortBy, sortOrder, limit: 2, q: alphabet[random.int(alphabet.length)] as string });
        }
      }
      queries.push({ limit: 1000 });
      let compared = 0;
      for (const query of queries) {
        const etcdPages: unknown[] = [];
        const coordPages: unknown[] = [];
        let etcdCursor: string | undefined;
        let coordCursor: string | undefined;
        for (let page = 0; page < 200; page++) {
          const op: ListOp = {
            type: 'list',
            namespace: 'p',
            ...query,
            ...(etcdCursor === undefined ? {} : { cursor: etcdCursor }),
          };
          const e = (await b.read(op)) as ListResult;
          const r = sm.query({ ...op, ...(coordCursor === undefined ? {} : { cursor: coordCursor }) }, nowMs);
          if (!r.ok) throw new Error(r.error.message);
          const c = r.value as ListResult;
          const view = (l: ListResult) => ({
            items: l.items.map((x) => [x.key, x.value, x.createdAt, x.updatedAt, x.expiresAt]),
            next: l.nextCursor,
          });
          etcdPages.push(view(e));
          coordPages.push(view(c));
          compared += e.items.length;
          if (e.nextCursor === null || c.nextCursor === null) break;
          etcdCursor = e.nextCursor;
          coordCursor = c.nextCursor;
        }
        expect(etcdPages, JSON.stringify(query)).toEqual(coordPages);
      }
      expect(compared).toBeGreaterThan(100);
    });
  }, 120_000);
});
