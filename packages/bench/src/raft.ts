/**
 * Raft benchmark: three voters in one process, messages handed over in memory
 * (no codec, no fsync), MemoryRaftStorage.
 *
 * - committed proposals/s with 1, 16 and 256 concurrent proposers (each keeps
 *   one proposal outstanding and proposes again once it is applied on the leader);
 * - the same at 256 proposers with every message through the binary codec;
 * - mean entries per append message;
 * - election time after a leader crash, in simulated ticks (median, p99), for
 *   the default timeouts (election 10 ticks, heartbeat 1).
 *
 * No external anchor here: the comparison with etcd over a real network and
 * disks comes with the node.
 */

import { type PeerId, SeededRandom } from '@parley/interface';
import { decodeMessage, encodeMessage, MemoryRaftStorage, type Message, RawNode } from '@parley/raft';
import { Bench, quantile, startStopwatch } from './index.js';

interface Member {
  id: PeerId;
  node: RawNode;
  storage: MemoryRaftStorage;
  down: boolean;
}

interface Stats {
  appMessages: number;
  appEntries: number;
}

function makeCluster(seed: number, ids: PeerId[]): Member[] {
  const rng = new SeededRandom(seed);
  return ids.map((id) => {
    const storage = new MemoryRaftStorage();
    return { id, storage, node: new RawNode({ id, storage, random: rng.fork(), voters: ids }), down: false };
  });
}

/** One pass: every member handles its Ready; returns the messages to deliver. */
function pump(members: Member[], onApply: (m: Member, index: number) => void, stats?: Stats): Message[] {
  const out: Message[] = [];
  for (const m of members) {
    if (m.down) continue;
    while (m.node.hasReady()) {
      const rd = m.node.ready();
      void m.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState });
      for (const msg of rd.messages) out.push(msg);
      for (const msg of rd.messagesAfterPersist) out.push(msg);
      for (const e of rd.committedEntries) onApply(m, e.index);
      m.node.advance();
    }
  }
  if (stats) {
    for (const msg of out) {
      if (msg.type === 'app' && msg.entries.length > 0) {
        stats.appMessages++;
        stats.appEntries += msg.entries.length;
      }
    }
  }
  return out;
}

function deliver(members: Map<PeerId, Member>, msgs: Message[], codec: boolean): void {
  for (const msg of msgs) {
    const to = members.get(msg.to);
    if (!to || to.down) continue;
    to.node.step(codec ? decodeMessage(encodeMessage(msg)) : msg);
  }
}

function settle(list: Member[], byId: Map<PeerId, Member>, onApply: (m: Member, i: number) => void): void {
  for (let i = 0; i < 100; i++) {
    const msgs = pump(list, onApply);
    if (msgs.length === 0) return;
    deliver(byId, msgs, false);
  }
}

/** What an application does periodically: snapshot at the applied index and drop the log before it. */
function compactAll(list: Member[]): void {
  for (const m of list) {
    const applied = m.node.raft.log.applied;
    if (applied - m.storage.firstIndex() < 10_000) continue;
    void m.storage.createSnapshot(applied, m.node.raft.confState(), new Uint8Array(0));
    void m.storage.compact(applied);
  }
}

function throughput(proposers: number, durationMs: number, codec: boolean): { perSec: number; entriesPerApp: number } {
  const list = makeCluster(7, ['a', 'b', 'c']);
  const byId = new Map(list.map((m) => [m.id, m]));
  const noop = () => {};
  (list[0] as Member).node.campaign();
  settle(list, byId, noop);
  const leader = list.find((m) => m.node.raft.state === 'leader') as Member;
  const payload = new Uint8Array(64);
  const outstanding = new Map<number, number>(); // index → proposer
  let idle: number[] = Array.from({ length: proposers }, (_, i) => i);
  let committed = 0;
  const stats: Stats = { appMessages: 0, appEntries: 0 };
  const onApply = (m: Member, index: number) => {
    if (m !== leader) return;
    const p = outstanding.get(index);
    if (p === undefined) return;
    outstanding.delete(index);
    committed++;
    idle.push(p);
  };
  const elapsedMs = startStopwatch();
  let rounds = 0;
  let elapsed = 0;
  while (elapsed < durationMs) {
    const ready = idle;
    idle = [];
    for (const p of ready) {
      const r = leader.node.propose(payload);
      if (r) outstanding.set(r.index, p);
    }
    const msgs = pump(list, onApply, stats);
    deliver(byId, msgs, codec);
    if (++rounds % 16 === 0) elapsed = elapsedMs();
    if (rounds % 256 === 0) compactAll(list);
  }
  elapsed = elapsedMs();
  return { perSec: (committed / elapsed) * 1000, entriesPerApp: stats.appEntries / Math.max(1, stats.appMessages) };
}

/**
 * Simulated time from a leader crash until a new leader is elected, in ticks.
 * Members tick with independent phase offsets (separate processes do not tick
 * in lockstep); messages arrive within the same instant.
 */
function electionTicks(seed: number): number {
  const ids = ['a', 'b', 'c'];
  const list = makeCluster(seed, ids);
  const byId = new Map(list.map((m) => [m.id, m]));
  const noop = () => {};
  const rng = new SeededRandom(seed ^ 0x5bd1e995);
  const phase = new Map(list.map((m) => [m, rng.float()]));
  const order = [...list].sort((x, y) => (phase.get(x) as number) - (phase.get(y) as number));
  const crashAt = 40 + rng.float() * 20; // steady state first, then a crash at a random instant
  let crashed = false;
  for (let k = 0; k < 2000; k++) {
    for (const m of order) {
      const now = k + (phase.get(m) as number);
      if (!crashed && now >= crashAt) {
        const old = list.find((x) => x.node.raft.state === 'leader');
        if (!old) throw new Error('no leader before the crash');
        old.down = true;
        crashed = true;
      }
      if (m.down) continue;
      m.node.tick();
      settle(list, byId, noop);
      if (crashed && list.some((x) => !x.down && x.node.raft.state === 'leader')) return now - crashAt;
    }
  }
  throw new Error('no leader elected');
}

async function main(): Promise<void> {
  const bench = new Bench('@parley/raft — 3 voters, in-memory transport, no fsync');
  const durationMs = Number(process.env.PARLEY_BENCH_MS ?? 2000);
  for (const p of [1, 16, 256]) {
    throughput(p, 200, false); // warm-up
    const r = throughput(p, durationMs, false);
    bench.add({ name: `committed proposals, ${p} proposers`, unit: 'proposals/s', value: r.perSec });
    bench.add({ name: `entries per append message, ${p} proposers`, unit: 'entries', value: r.entriesPerApp });
  }
  const withCodec = throughput(256, durationMs, true);
  bench.add({ name: 'committed proposals, 256 proposers, binary codec', unit: 'proposals/s', value: withCodec.perSec });
  const samples: number[] = [];
  for (let seed = 1; seed <= 1000; seed++) samples.push(electionTicks(seed));
  bench.add({ name: 'election after leader crash, median (timeout 10)', unit: 'ticks', value: quantile(samples, 0.5) });
  bench.add({ name: 'election after leader crash, p99 (timeout 10)', unit: 'ticks', value: quantile(samples, 0.99) });
  await bench.finish();
}

await main();
