/**
 * `npm run bench:storage [-- --json FILE]`
 *
 * 1. Raft log appends per second with fsync, at 1, 16 and 256 entries per save, against raw classic-level
 *    batches of the same records written with `{ sync: true }`.
 * 2. Reopening and loading 1,000,000 Raft log entries (target ≤ 3 s), against opening the same database with
 *    raw classic-level and iterating every record.
 * 3. Reopening and loading 1,000,000 KV entries with `loadRange([])` (target ≤ 3 s), against the same raw
 *    classic-level open and iteration.
 *
 * Each load is timed twice and the faster run kept, for Parley and the anchor alike. Everything runs in a
 * fresh temp directory that is removed at the end; PARLEY_BENCH_LOAD_COUNT shrinks the load tests.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { RaftEntry, StorageOp } from '@parley/interface';
import { openLevelKV, openLevelRaftLog } from '@parley/storage';
import { entryKey } from '@parley/storage/codec';
import { ClassicLevel } from 'classic-level';
import { Bench } from './index.js';

const ENTRY_DATA_BYTES = 100;
const KV_VALUE_BYTES = 64;
const LOAD_COUNT = Number(process.env.PARLEY_BENCH_LOAD_COUNT ?? 1_000_000);
const APPEND_BUDGET_MS = 2_000;
const SETUP_BATCH = 10_000;

type Raw = ClassicLevel<Buffer, Buffer>;
const openRaw = async (path: string): Promise<Raw> => {
  const db = new ClassicLevel<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  return db;
};

function payload(bytes: number, seed: number): Uint8Array {
  const data = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) data[i] = (seed * 31 + i * 7) & 0xff;
  return data;
}

/** Runs `step` until the budget is spent (at least 5 times); returns units per second. */
async function rate(units: number, step: (i: number) => Promise<void>): Promise<number> {
  await step(0); // warm-up
  let n = 0;
  const start = performance.now();
  while (n < 5 || performance.now() - start < APPEND_BUDGET_MS) await step(++n);
  return (n * units * 1000) / (performance.now() - start);
}

async function benchAppends(bench: Bench, dir: string): Promise<void> {
  for (const batch of [1, 16, 256]) {
    const log = await openLevelRaftLog({ path: join(dir, `append-${batch}`) });
    let next = 1;
    const ours = await rate(batch, async () => {
      const entries: RaftEntry[] = [];
      for (let k = 0; k < batch; k++) {
        entries.push({ term: 1, index: next, type: 'normal', data: payload(ENTRY_DATA_BYTES, next) });
        next++;
      }
      await log.save({ entries, hardState: { term: 1, vote: 'a', commit: next - batch - 1 } });
    });
    await log.close();

    const raw = await openRaw(join(dir, `append-raw-${batch}`));
    let rawNext = 1;
    const anchor = await rate(batch, async () => {
      const ops: { type: 'put'; key: Buffer; value: Buffer }[] = [];
      for (let k = 0; k < batch; k++) {
        // The same key and value sizes as the store's records: a 9-byte key, header + term + type + data.
        ops.push({ type: 'put', key: entryKey(rawNext), value: Buffer.from(payload(ENTRY_DATA_BYTES + 14, rawNext)) });
        rawNext++;
      }
      ops.push({ type: 'put', key: Buffer.from('h'), value: Buffer.alloc(22) });
      await raw.batch(ops, { sync: true });
    });
    await raw.close();
    bench.add({
      name: `raft log append with fsync, ${batch} per save`,
      unit: 'entries/s',
      value: ours,
      anchor: `classic-level batch(sync), ${batch} per batch`,
      anchorValue: anchor,
    });
  }
}

/**
 * Iterates every record of the database at `path` with raw classic-level: the anchor for both loads. With
 * `keep`, the records are also kept in memory, as a load that returns them must.
 */
async function rawLoadMs(path: string, keep = false): Promise<{ ms: number; count: number }> {
  const start = performance.now();
  const db = await openRaw(path);
  const it = db.iterator();
  let count = 0;
  let bytes = 0;
  const kept: [Buffer, Buffer][][] = [];
  for (;;) {
    const step = await it.nextv(4_096);
    if (step.length === 0) break;
    for (const [k, v] of step) bytes += k.length + v.length;
    if (keep) kept.push(step);
    count += step.length;
  }
  await it.close();
  const ms = performance.now() - start;
  await db.close();
  if (bytes === 0 && count > 0) throw new Error('unreachable');
  return { ms, count };
}

async function best<T extends { ms: number }>(runs: number, fn: () => Promise<T>): Promise<T> {
  let result = await fn();
  for (let i = 1; i < runs; i++) {
    const next = await fn();
    if (next.ms < result.ms) result = next;
  }
  return result;
}

async function benchLogLoad(bench: Bench, dir: string): Promise<void> {
  const path = join(dir, 'log-load');
  const writer = await openLevelRaftLog({ path, sync: false });
  for (let from = 1; from <= LOAD_COUNT; from += SETUP_BATCH) {
    const entries: RaftEntry[] = [];
    for (let i = from; i < Math.min(from + SETUP_BATCH, LOAD_COUNT + 1); i++) {
      entries.push({ term: 1 + Math.floor(i / 100_000), index: i, type: 'normal', data: payload(ENTRY_DATA_BYTES, i) });
    }
    await writer.save({ entries, hardState: { term: 10, vote: 'a', commit: from - 1 } });
  }
  await writer.close();
  const ours = await best(2, async () => {
    const start = performance.now();
    const log = await openLevelRaftLog({ path });
    const ms = performance.now() - start;
    const count = log.lastIndex() - log.firstIndex() + 1;
    await log.close();
    return { ms, count };
  });
  const anchor = await best(2, () => rawLoadMs(path));
  const kept = await best(2, () => rawLoadMs(path, true));
  if (ours.count !== LOAD_COUNT) throw new Error(`loaded ${ours.count} entries, wrote ${LOAD_COUNT}`);
  const name = `reopen + load ${LOAD_COUNT.toLocaleString('en-US')} raft log entries (checked)`;
  bench.add({ name, unit: 'ms', value: ours.ms, anchor: 'classic-level open + iterate all', anchorValue: anchor.ms });
  bench.add({
    name,
    unit: 'ms',
    value: ours.ms,
    anchor: 'classic-level open + iterate, keep all',
    anchorValue: kept.ms,
  });
}

async function benchKvLoad(bench: Bench, dir: string): Promise<void> {
  const path = join(dir, 'kv-load');
  const writer = await openLevelKV({ path, sync: false });
  for (let from = 0; from < LOAD_COUNT; from += SETUP_BATCH) {
    const ops: StorageOp[] = [];
    for (let i = from; i < Math.min(from + SETUP_BATCH, LOAD_COUNT); i++) {
      ops.push({ type: 'put', key: ['crdt', `ns-${i % 100}`, `key-${i}`], data: payload(KV_VALUE_BYTES, i) });
    }
    await writer.batch(ops);
  }
  await writer.close();
  const ours = await best(2, async () => {
    const start = performance.now();
    const kv = await openLevelKV({ path });
    const chunks = await kv.loadRange([]);
    const ms = performance.now() - start;
    await kv.close();
    return { ms, count: chunks.length };
  });
  const anchor = await best(2, () => rawLoadMs(path));
  const kept = await best(2, () => rawLoadMs(path, true));
  if (ours.count !== LOAD_COUNT) throw new Error(`loaded ${ours.count} KV entries, wrote ${LOAD_COUNT}`);
  const name = `reopen + loadRange([]) of ${LOAD_COUNT.toLocaleString('en-US')} KV entries (checked, keys decoded)`;
  bench.add({ name, unit: 'ms', value: ours.ms, anchor: 'classic-level open + iterate all', anchorValue: anchor.ms });
  bench.add({
    name,
    unit: 'ms',
    value: ours.ms,
    anchor: 'classic-level open + iterate, keep all',
    anchorValue: kept.ms,
  });
}

async function main(): Promise<void> {
  const bench = new Bench('@parley/storage (level on disk; ratio > 1 means slower for ms, faster for /s)');
  const dir = await mkdtemp(join(tmpdir(), 'parley-storage-bench-'));
  try {
    await benchAppends(bench, dir);
    await benchLogLoad(bench, dir);
    await benchKvLoad(bench, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  await bench.finish();
}

await main();
