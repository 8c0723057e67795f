/**
 * Coord benchmark: apply throughput of the state machine on one core, and
 * snapshot size per key. There is no external anchor yet (an etcd-backed
 * comparison belongs to the node-level benchmark once Raft is wired in), so
 * every row reports anchor null.
 *
 * Run: npm run bench:coord [-- --json FILE]
 */

import { type Command, CoordStateMachine, encodeCommand, type OpResult, unwrap } from '@parley/coord';
import { InvalidArgumentError } from '@parley/interface';
import { Bench, measureOps, timeMs } from './index.js';

const START_MS = 1_700_000_000_000;

class Driver {
  readonly sm = new CoordStateMachine({ versionKey: 'bench' });
  index = 0;
  nowMs = START_MS;

  apply(command: Command): OpResult {
    return unwrap(this.sm.apply(command, { index: ++this.index, term: 1 }).result);
  }
}

const value = { status: 'running', attempts: 3, owner: 'worker-17', progress: 0.42 };
const bench = new Bench('coord state machine (apply on one core)');
const N = 100_000;

{
  const d = new Driver();
  const ops = measureOps((i) => {
    d.apply({ nowMs: START_MS + i, op: { type: 'set', namespace: 'bench', key: `k${i % 5000}`, value } });
  }, N);
  bench.add({ name: 'set (5,000 keys, 80 B value)', unit: 'ops/s', value: ops });
}

{
  const d = new Driver();
  const c = d.apply({ nowMs: START_MS, op: { type: 'register_session' } });
  const clientId = c.type === 'session' ? c.clientId : '';
  const ops = measureOps((i) => {
    d.apply({
      nowMs: START_MS + i,
      clientId,
      seq: i + 1,
      ackSeq: i,
      op: { type: 'set', namespace: 'bench', key: `k${i % 5000}`, value },
    });
  }, N);
  bench.add({ name: 'set with exactly-once session', unit: 'ops/s', value: ops });
}

{
  const d = new Driver();
  const versions = new Map<string, string>();
  const ops = measureOps((i) => {
    const key = `k${i % 1000}`;
    const ifVersion = versions.get(key);
    const r = d.apply({
      nowMs: START_MS + i,
      op: ifVersion
        ? { type: 'set', namespace: 'bench', key, value, ifVersion }
        : { type: 'set', namespace: 'bench', key, value, ifNotExists: true },
    });
    if (r.type === 'entry') versions.set(key, r.entry.version);
  }, N);
  bench.add({ name: 'cas (set ifVersion, 1,000 keys)', unit: 'ops/s', value: ops });
}

{
  const d = new Driver();
  const bytes: Uint8Array[] = [];
  for (let i = 0; i < 1000; i++) {
    bytes.push(encodeCommand({ nowMs: START_MS, op: { type: 'set', namespace: 'bench', key: `k${i}`, value } }));
  }
  const ops = measureOps((i) => {
    unwrap(d.sm.applyBytes(bytes[i % 1000] as Uint8Array, { index: ++d.index, term: 1 }).result);
  }, N);
  bench.add({ name: 'decode + set (from log bytes)', unit: 'ops/s', value: ops });
}

{
  const d = new Driver();
  const ops = measureOps((i) => {
    const key = `lock${i % 100}`;
    const g = d.apply({
      nowMs: START_MS + i,
      op: { type: 'lock_acquire', namespace: 'bench', key, owner: 'w', ttlSeconds: 30 },
    });
    if (g.type !== 'lock') throw new InvalidArgumentError('no grant');
    d.apply({
      nowMs: START_MS + i,
      op: { type: 'lock_release', namespace: 'bench', key, owner: 'w', fence: g.lock.fence },
    });
  }, N / 2);
  bench.add({ name: 'lock acquire + release (pair)', unit: 'pairs/s', value: ops });
}

{
  const d = new Driver();
  const ops = measureOps((i) => {
    d.apply({
      nowMs: START_MS + i,
      op: { type: 'claim', namespace: `b${Math.floor(i / 9000)}`, key: `c${i}`, value: { run: i } },
    });
  }, N);
  bench.add({ name: 'claim (fresh keys)', unit: 'ops/s', value: ops });
}

{
  const d = new Driver();
  const ops = measureOps((i) => {
    const r = d.apply({
      nowMs: START_MS + i * 1000,
      op: { type: 'lease_acquire', namespace: 'bench', key: `l${i % 100}`, holder: `h${i % 7}`, ttlSeconds: 1 },
    });
    if (r.type !== 'lease') throw new InvalidArgumentError('no lease');
    d.apply({
      nowMs: START_MS + i * 1000,
      op: {
        type: 'lease_write',
        namespace: 'bench',
        key: r.lease.key,
        holder: r.lease.holder ?? '',
        epoch: r.lease.epoch,
        state: value,
      },
    });
  }, N / 2);
  bench.add({ name: 'lease acquire + write (pair)', unit: 'pairs/s', value: ops });
}

{
  const d = new Driver();
  const keys = 10_000;
  for (let i = 0; i < keys; i++) {
    d.apply({ nowMs: START_MS, op: { type: 'set', namespace: 'bench', key: `key-${i}`, value } });
  }
  let snap: Uint8Array = new Uint8Array();
  const snapMs = timeMs(() => {
    snap = d.sm.snapshot();
  });
  bench.add({ name: 'snapshot size (10,000 keys, 80 B value)', unit: 'bytes/key', value: snap.length / keys });
  bench.add({ name: 'snapshot encode (10,000 keys)', unit: 'ms', value: snapMs });
  const restoreMs = timeMs(() => new CoordStateMachine({ versionKey: 'bench' }).restore(snap));
  bench.add({ name: 'snapshot restore (10,000 keys)', unit: 'ms', value: restoreMs });
  const rounds = 50;
  const expireMs =
    timeMs(() => {
      for (let r = 1; r <= rounds; r++) d.apply({ nowMs: START_MS + r, op: { type: 'expire' } });
    }) / rounds;
  bench.add({ name: 'expire, nothing due (10,000 keys)', unit: 'ms', value: expireMs });
}

{
  // A full scan: one short-lived key among 10,000 makes every expire due.
  const d = new Driver();
  for (let i = 0; i < 9_999; i++) {
    d.apply({ nowMs: START_MS, op: { type: 'set', namespace: 'bench', key: `key-${i}`, value } });
  }
  const rounds = 50;
  const scanMs =
    timeMs(() => {
      for (let r = 1; r <= rounds; r++) {
        const t = START_MS + r * 2000;
        d.apply({ nowMs: t, op: { type: 'set', namespace: 'bench', key: 'short', value, ttlSeconds: 1 } });
        d.apply({ nowMs: t + 1000, op: { type: 'expire' } });
      }
    }) / rounds;
  bench.add({ name: 'expire, full scan (10,000 keys, 1 due)', unit: 'ms', value: scanMs });
  const mass = new Driver();
  for (let i = 0; i < 10_000; i++) {
    mass.apply({ nowMs: START_MS, op: { type: 'set', namespace: 'bench', key: `key-${i}`, value, ttlSeconds: 1 } });
  }
  const massMs = timeMs(() => mass.apply({ nowMs: START_MS + 1000, op: { type: 'expire' } }));
  bench.add({ name: 'expire removing 10,000 keys', unit: 'ms', value: massMs });
}

await bench.finish();
