/**
 * What a list page, usage() and deleteNamespace read from etcd: bytes of keys
 * and values returned (EtcdCalls.bytesRead) and wall time, on a full namespace
 * (10,000 keys of about 3 KB: 30 MB of values) on a 1-member loopback etcd.
 *
 * Run: npm run bench:etcd-list [-- --keys N] [--value-bytes N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Operation, OpResult } from '@parley/coord';
import { ETCD_MISSING, EtcdBackend, EtcdCluster, encodeEntryRecord, findEtcd } from '@parley/etcd';
import { Etcd3 } from 'etcd3';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const KEYS = arg('--keys', 10_000);
const VALUE_BYTES = arg('--value-bytes', 3_000);

const bin = findEtcd();
if (!bin) {
  process.stderr.write(`${ETCD_MISSING}\n`);
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'parley-etcd-list-'));
const cluster = await EtcdCluster.start(bin, dir, { members: 1 });
const prefix = '/list';
const backend = new EtcdBackend({ endpoints: cluster.endpoints, prefix });
const raw = new Etcd3({ hosts: cluster.endpoints });
try {
  // The namespace is written as records directly (100 per transaction): the bench measures reads.
  const now = Date.now();
  const filler = 'x'.repeat(VALUE_BYTES);
  for (let i = 0; i < KEYS; i += 100) {
    const txn = raw.if(`${prefix}/none`, 'Create', '==', 0);
    const puts = [];
    for (let j = i; j < Math.min(KEYS, i + 100); j++) {
      const value = { n: j, status: j % 100 === 7 ? 'rare' : 'common', filler };
      const record = encodeEntryRecord({
        kind: 'value',
        value,
        valueBytes: JSON.stringify(value).length,
        ttlSeconds: 3600,
        createdAt: now + j,
        updatedAt: now + j,
        expiresAt: now + 3_600_000,
      });
      puts.push(raw.put(backend.keys.entry('big', `job/${String(j).padStart(5, '0')}`)).value(record));
    }
    const out = await txn.then(...puts).commit();
    if (!out.succeeded) throw new Error('fill failed');
  }
  const rows: Array<[string, () => Promise<unknown>]> = [
    ['list limit=1', () => backend.read(list({ limit: 1 }))],
    ['list limit=1 desc', () => backend.read(list({ limit: 1, sortOrder: 'desc' }))],
    ['list limit=100', () => backend.read(list({ limit: 100 }))],
    ['list limit=1 q=0123', () => backend.read(list({ limit: 1, q: '0123' }))],
    ['list limit=1 filter (1 in 100 match)', () => backend.read(list({ limit: 1, filter: 'status = "rare"' }))],
    [
      'list limit=1 sort_by=updated_at desc',
      () => backend.read(list({ limit: 1, sortBy: 'updated_at', sortOrder: 'desc' })),
    ],
    ['usage()', () => backend.usage()],
    [
      'deleteNamespace pattern matching 1 key',
      () => backend.write({ type: 'delete_namespace', namespace: 'big', confirm: true, pattern: 'job/00042' }),
    ],
  ];
  process.stdout.write(`${KEYS} keys of ${VALUE_BYTES} B values in one namespace, 1-member loopback etcd\n\n`);
  process.stdout.write(
    '| call | bytes read from etcd | ms | longest event-loop stall, ms |\n| --- | ---: | ---: | ---: |\n',
  );
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  for (const [name, run] of rows) {
    const before = backend.calls.bytesRead;
    loop.reset();
    const t = performance.now();
    const r = await run();
    const ms = performance.now() - t;
    const stall = loop.max / 1e6;
    const bytes = backend.calls.bytesRead - before;
    if ((r as OpResult).type === 'list' && (r as Extract<OpResult, { type: 'list' }>).items.length === 0) {
      throw new Error(`${name}: an empty page`);
    }
    process.stdout.write(`| ${name} | ${bytes.toLocaleString('en-US')} | ${ms.toFixed(0)} | ${stall.toFixed(0)} |\n`);
  }
} finally {
  raw.close();
  await backend.close();
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
}

function list(extra: Omit<Extract<Operation, { type: 'list' }>, 'type' | 'namespace'>): Operation {
  return { type: 'list', namespace: 'big', ...extra };
}
