/**
 * What Parley's strong side costs on etcd: the etcd backend against the
 * etcd3 client used directly (the anchor), on the same 3-member loopback etcd
 * in the same run, on the same workloads. The ratio is Parley's overhead:
 * its read-decide-commit transaction, request-id record and record decoding.
 *
 * Run: npm run bench:etcd [-- --json FILE] [--ops N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { OpResult } from '@parley/coord';
import { ETCD_MISSING, EtcdBackend, EtcdCluster, findEtcd } from '@parley/etcd';
import { Etcd3 } from 'etcd3';
import { Bench } from './index.js';

const opsArg = process.argv.indexOf('--ops');
const OPS = opsArg >= 0 ? Number(process.argv[opsArg + 1]) : 300;
const CLIENTS = 16;
const value = { status: 'running', attempts: 3, owner: 'worker-17', progress: 0.42 };

function p50(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function latencies(n: number, op: (i: number) => Promise<void>): Promise<number[]> {
  for (let i = 0; i < Math.max(5, n / 10); i++) await op(-1 - i);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    out.push(performance.now() - t);
  }
  return out;
}

/** ops/s of `clients` concurrent loops of `perClient` ops each. */
async function throughput(clients: number, perClient: number, op: (c: number, i: number) => Promise<void>) {
  const t = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < perClient; i++) await op(c, i);
    }),
  );
  return (clients * perClient * 1000) / (performance.now() - t);
}

const bin = findEtcd();
if (!bin) {
  process.stderr.write(`${ETCD_MISSING}\n`);
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'parley-etcd-bench-'));
const cluster = await EtcdCluster.start(bin, dir);
const backend = new EtcdBackend({ endpoints: cluster.endpoints, prefix: '/bench' });
const raw = new Etcd3({ hosts: cluster.endpoints });
const bench = new Bench(`Parley on etcd vs the etcd3 client (3-member loopback etcd, ${OPS} ops per row)`);

try {
  {
    const parley = await latencies(OPS, async (i) => {
      await backend.write({ type: 'set', namespace: 'b', key: `k${i % 100}`, value });
    });
    const anchor = await latencies(OPS, async (i) => {
      await raw.put(`/raw/k${i % 100}`).value(JSON.stringify(value));
    });
    bench.add({
      name: 'set p50, 1 client',
      unit: 'ms',
      value: p50(parley),
      anchor: 'etcd3 put',
      anchorValue: p50(anchor),
    });
  }
  {
    const parley = await latencies(OPS, async (i) => {
      await backend.read({ type: 'get', namespace: 'b', key: `k${Math.abs(i) % 100}` });
    });
    const anchor = await latencies(OPS, async (i) => {
      await raw.get(`/raw/k${Math.abs(i) % 100}`).string();
    });
    bench.add({
      name: 'get p50, 1 client',
      unit: 'ms',
      value: p50(parley),
      anchor: 'etcd3 get',
      anchorValue: p50(anchor),
    });
  }
  {
    const per = Math.max(1, Math.floor(OPS / CLIENTS));
    const parley = await throughput(CLIENTS, per, async (c) => {
      // A read-modify-write by CAS on the client's own key, retried on conflict (none: one writer per key).
      const got = await backend
        .read({ type: 'get', namespace: 'cas', key: `c${c}` })
        .catch(() => undefined as OpResult | undefined);
      const version = got?.type === 'got' ? got.entry.version : undefined;
      await backend.write({
        type: 'set',
        namespace: 'cas',
        key: `c${c}`,
        value,
        ...(version ? { ifVersion: version } : { ifNotExists: true }),
      });
    });
    const anchor = await throughput(CLIENTS, per, async (c) => {
      const key = `/raw/cas/c${c}`;
      const r = await raw.get(key).exec();
      const rev = r.kvs[0]?.mod_revision ?? '0';
      await raw
        .if(key, 'Mod', '==', rev)
        .then(raw.put(key).value(JSON.stringify(value)))
        .commit();
    });
    bench.add({
      name: `CAS read-modify-write, ${CLIENTS} clients on ${CLIENTS} keys`,
      unit: 'ops/s',
      value: parley,
      anchor: 'etcd3 get + txn(mod_revision)',
      anchorValue: anchor,
    });
  }
  {
    const per = Math.max(1, Math.floor(OPS / CLIENTS));
    const parley = await throughput(CLIENTS, per, async (c, i) => {
      await backend.write({ type: 'claim', namespace: 'claims', key: `j${c}-${i}`, value });
    });
    const anchor = await throughput(CLIENTS, per, async (c, i) => {
      const key = `/raw/claims/j${c}-${i}`;
      await raw
        .if(key, 'Create', '==', 0)
        .then(raw.put(key).value(JSON.stringify(value)))
        .commit();
    });
    bench.add({
      name: `create-only claims, ${CLIENTS} clients`,
      unit: 'ops/s',
      value: parley,
      anchor: 'etcd3 txn(create_revision = 0)',
      anchorValue: anchor,
    });
  }
  await bench.finish();
} finally {
  raw.close();
  await backend.close();
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
}
