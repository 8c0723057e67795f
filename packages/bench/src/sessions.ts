/**
 * Sessions (docs/sessions.md): what a session token weighs and what carrying
 * one costs a read.
 *
 * - Token size: the characters of `session.token` (what travels in the
 *   `Parley-Session` header, one byte each) for a session that wrote N times
 *   across K origins of one eventual namespace, plus a strong index of N. A
 *   token is a frontier: one counter per origin, so it grows with K and only
 *   logarithmically with N. The frontier is built with `observeEventual` /
 *   `observeStrong`, as the node moves a session after each write, with real
 *   libp2p peer ids as origins; the anchor is the same N writes listed one
 *   (origin, counter) per write in the same encoding (a log of operations,
 *   which a frontier never is).
 * - Latency: a single node (LevelDB with fsync, one Raft voter), warmed up;
 *   `eventual(ns).get` and `strong(ns).get({consistency: 'serializable'})`
 *   with a session that covers the node's state vs the same call without one,
 *   in alternating rounds of the same run; the median per call of each.
 * - The door's work: `Session.from(token)` and `session.token` for a
 *   3-origin token (what the HTTP door does per request on top of the call).
 *
 * Run: npm run bench:sessions [-- --json FILE] [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreatePrivateKey, peerIdOf } from '@parley/net';
import { createNode, Session } from '@parley/node';
import { Bench, measureOps, quantile, warmUp } from './index.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

async function peerIds(n: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-session-bench-ids-'));
  try {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(peerIdOf(await loadOrCreatePrivateKey(join(dir, `k${i}`))).toString());
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The token of a session that made `writes` writes spread evenly over `origins`. */
function frontierToken(origins: readonly string[], writes: number): string {
  const s = Session.from();
  const per = Math.ceil(writes / origins.length);
  s.observeEventual(
    'ns',
    origins.map((o) => [o, per] as const),
  );
  s.observeStrong(writes);
  return s.token;
}

/** The same writes as a log: one (origin, counter) per write, in the token's own encoding. */
function logLength(origins: readonly string[], writes: number): number {
  const per = Math.ceil(writes / origins.length);
  // Each write as its own namespace entry would repeat the origin; count its bytes as the
  // token encodes one origin entry (length-prefixed id + varint counter), then base64url.
  let bytes = 0;
  for (let seq = 1; seq <= per; seq++) bytes += origins.length * (1 + origins[0]!.length + varintBytes(seq));
  return Math.ceil((bytes * 4) / 3);
}

const varintBytes = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

async function tokenSizes(bench: Bench): Promise<void> {
  const ids = await peerIds(100);
  for (const k of [1, 3, 10, 100]) {
    for (const n of [100, 10_000, 1_000_000]) {
      if (n < k) continue;
      const token = frontierToken(ids.slice(0, k), n);
      bench.add({
        name: `token after ${n.toLocaleString('en')} writes on ${k} origin${k === 1 ? '' : 's'}`,
        unit: 'bytes',
        value: token.length,
        anchor: 'the writes as a log',
        anchorValue: logLength(ids.slice(0, k), n),
      });
    }
  }
}

/** Median µs per call of `op` over `rounds` rounds of `perRound` calls, alternating with `other`. */
async function paired(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  rounds: number,
  perRound: number,
): Promise<{ a: number; b: number }> {
  const sa: number[] = [];
  const sb: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const [op, sample] of r % 2 === 0
      ? ([
          [a, sa],
          [b, sb],
        ] as const)
      : ([
          [b, sb],
          [a, sa],
        ] as const)) {
      for (let i = 0; i < perRound; i++) {
        const t = performance.now();
        await op();
        sample.push((performance.now() - t) * 1000);
      }
    }
  }
  return { a: quantile(sa, 0.5), b: quantile(sb, 0.5) };
}

async function latency(bench: Bench): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-session-bench-'));
  const node = await createNode({ dataDir, logger: quiet });
  try {
    const ev = node.eventual('bench');
    const st = node.strong('bench');
    const session = Session.from();
    for (let i = 0; i < 100; i++) {
      await ev.set(`k${i}`, i, { session });
      await st.set(`k${i}`, i, { session });
    }
    const rounds = quick ? 4 : 10;
    const perRound = quick ? 500 : 2_000;
    let i = 0;
    const evWith = () => ev.get(`k${i++ % 100}`, { session });
    const evWithout = () => ev.get(`k${i++ % 100}`);
    const stWith = () => st.get(`k${i++ % 100}`, { consistency: 'serializable', session });
    const stWithout = () => st.get(`k${i++ % 100}`, { consistency: 'serializable' });
    await warmUp(() => Promise.all([evWith(), evWithout(), stWith(), stWithout()]));
    const e = await paired(evWith, evWithout, rounds, perRound);
    bench.add({
      name: 'eventual get with a session (median)',
      unit: 'µs',
      value: e.a,
      anchor: 'the same get without a session',
      anchorValue: e.b,
    });
    const s = await paired(stWith, stWithout, rounds, perRound);
    bench.add({
      name: 'strong serializable get with a session (median)',
      unit: 'µs',
      value: s.a,
      anchor: 'the same get without a session',
      anchorValue: s.b,
    });
    process.stderr.write(`  (session token of the latency rows: ${session.token.length} characters)\n`);
  } finally {
    await node.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function doorWork(bench: Bench): Promise<void> {
  const token = frontierToken(await peerIds(3), 10_000);
  const n = quick ? 20_000 : 200_000;
  const decode = measureOps(() => Session.from(token), n);
  const s = Session.from(token);
  const encode = measureOps(() => s.token, n);
  bench.add({ name: `Session.from(token), ${token.length}-character token`, unit: 'ops/s', value: decode });
  bench.add({ name: `session.token, ${token.length}-character token`, unit: 'ops/s', value: encode });
}

const bench = new Bench('Parley sessions: token size and the latency a token adds');
await tokenSizes(bench);
await doorWork(bench);
await latency(bench);
await bench.finish();
