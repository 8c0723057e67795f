/**
 * Failover of a forwarded call, on fake time: the leader freezes (a stopped
 * VM, a dead host whose connections stay open) while a follower's write is on
 * its way to it. The follower's Raft view soon names a new leader; the write
 * must be re-sent there at once, not after its whole attempt timeout, and
 * still apply once.
 */
import {
  Emitter,
  type PeerId,
  type RequestHandler,
  type RequestOptions,
  SeededRandom,
  systemClock,
  systemScheduler,
  TimeoutError,
  type Transport,
} from '@parley/interface';
import { createMemoryNetwork, type MemoryTransport, silentLogger } from '@parley/net';
import { MemoryKVDisk, MemoryKVStorage, MemoryRaftLogDisk, MemoryRaftLogStorage } from '@parley/storage';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { NodeContext, NodeEvents } from '../context.js';
import { createStrongModule, type StrongModule } from './module.js';
import { FAST, quietLogger } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];
const ELECTION_MS = (FAST.electionTimeoutTicks as number) * (FAST.tickMs as number);
const ATTEMPT_MS = FAST.attemptTimeoutMs as number;

/**
 * A transport that goes silent while its host (or the peer it talks to) is
 * frozen: requests get no answer and time out as a real one would, one-way
 * messages vanish, incoming requests are never answered; the connection
 * stays up.
 */
function freezable(t: MemoryTransport, frozen: Set<PeerId>): Transport {
  const silent = (self: PeerId, peer: PeerId) => frozen.has(self) || frozen.has(peer);
  return new Proxy(t, {
    get(target, prop) {
      if (prop === 'request') {
        return (peer: PeerId, protocol: string, payload: Uint8Array, options?: RequestOptions) => {
          if (!silent(target.peerId, peer)) return target.request(peer, protocol, payload, options);
          return new Promise((_, reject) => {
            const ms = options?.timeoutMs ?? 5_000;
            setTimeout(() => reject(new TimeoutError(`request to ${peer} timed out after ${ms} ms`)), ms);
          });
        };
      }
      if (prop === 'send') {
        return (peer: PeerId, protocol: string, payload: Uint8Array) =>
          silent(target.peerId, peer) ? Promise.resolve() : target.send(peer, protocol, payload);
      }
      if (prop === 'handle') {
        return (protocol: string, handler: RequestHandler) =>
          target.handle(protocol, (from, bytes) =>
            silent(target.peerId, from) ? new Promise<Uint8Array>(() => {}) : handler(from, bytes),
          );
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Transport;
}

/** Advances fake time in small steps until `p` settles (fails after `maxMs` of fake time). */
async function settle<T>(p: Promise<T>, maxMs: number): Promise<T> {
  let done = false;
  const watched = p.finally(() => {
    done = true;
  });
  watched.catch(() => {});
  const end = Date.now() + maxMs;
  while (!done) {
    if (Date.now() > end) throw new Error(`not settled within ${maxMs} ms of fake time`);
    await vi.advanceTimersByTimeAsync(5);
  }
  return watched;
}

async function until(check: () => boolean, maxMs: number): Promise<void> {
  const end = Date.now() + maxMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`condition not met within ${maxMs} ms of fake time`);
    await vi.advanceTimersByTimeAsync(5);
  }
}

interface Member {
  id: PeerId;
  module: StrongModule;
  raw: MemoryTransport;
}

const modules: StrongModule[] = [];
beforeEach(() => {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'Date'],
  });
});
afterEach(async () => {
  for (const m of modules.splice(0)) await m.close();
  vi.useRealTimers();
});

async function group(frozen: Set<PeerId>, ids: PeerId[]): Promise<Member[]> {
  const network = createMemoryNetwork();
  const members: Member[] = [];
  for (const [i, id] of ids.entries()) {
    const raw = network.createTransport({ peerId: id, logger: silentLogger });
    await raw.start();
    const ctx: NodeContext = {
      peerId: id,
      transport: freezable(raw, frozen),
      clock: systemClock,
      scheduler: systemScheduler,
      random: new SeededRandom(7 + i),
      logger: quietLogger,
      storage: {
        kv: new MemoryKVStorage({ disk: new MemoryKVDisk() }),
        raftLog: new MemoryRaftLogStorage({ disk: new MemoryRaftLogDisk() }),
      },
      events: new Emitter<NodeEvents>(),
      dataDir: null,
    };
    const module = await settle(createStrongModule(ctx, { ...FAST, voters: VOTERS }), 1_000);
    modules.push(module);
    members.push({ id, module, raw });
  }
  return members;
}

async function leaderOf(members: Member[]): Promise<Member> {
  let leader: Member | undefined;
  await until(() => {
    leader = members.find((m) => m.module.replica.isLeader());
    const voters = members.filter((m) => VOTERS.includes(m.id));
    return leader !== undefined && voters.every((m) => m.module.replica.leaderHint() === leader?.id);
  }, 5_000);
  return leader as Member;
}

describe('a forwarded call whose leader freezes', () => {
  it('is re-sent to the new leader as soon as this member learns of it, and applies once', async () => {
    const frozen = new Set<PeerId>();
    const members = await group(frozen, VOTERS);
    const old = await leaderOf(members);
    const caller = members.find((m) => m.id !== old.id) as Member;
    const ns = caller.module.strong('ns');
    await settle(ns.set('warm', 0), 2_000); // the caller's session is registered

    const t0 = Date.now();
    const call = ns.set('k', 1, { ifNotExists: true });
    frozen.add(old.id); // before the write reaches it: it will never answer
    const res = await settle(call, 3 * ATTEMPT_MS);
    const elapsedMs = Date.now() - t0;

    expect(res.operation).toBe('created');
    // Randomized election timeout (up to 2 × ELECTION_MS) plus a margin for the
    // vote and one commit, far below the attempt timeout the call waited before.
    expect(elapsedMs).toBeLessThan(2 * ELECTION_MS + 150);
    expect(elapsedMs).toBeLessThan(ATTEMPT_MS);
    expect(caller.module.router.abandoned).toBeGreaterThan(0);

    // Exactly once: the old leader comes back, catches up, and every replica
    // holds one change for `k` (a second apply would be a second change or a
    // key_already_exists answer).
    frozen.delete(old.id);
    const now = await leaderOf(members);
    expect(now.id).not.toBe(old.id);
    await until(
      () => members.every((m) => m.module.replica.appliedThrough === now.module.replica.appliedThrough),
      3_000,
    );
    for (const m of members) {
      const changes = m.module.replica.changes.since(0, { namespace: 'ns' }, 100).filter((c) => c.key === 'k');
      expect(changes).toHaveLength(1);
    }
  });

  it("from a node outside the group, is re-sent once the dead leader's connection closes and another is elected", async () => {
    const frozen = new Set<PeerId>();
    const members = await group(frozen, [...VOTERS, 'client']);
    const old = await leaderOf(members);
    const client = members.find((m) => m.id === 'client') as Member;
    const ns = client.module.strong('ns');
    await settle(ns.set('warm', 0), 2_000);

    // The leader's process dies: its module stops and its connections close.
    modules.splice(modules.indexOf(old.module), 1);
    await old.module.close();
    await old.raw.stop();
    const t0 = Date.now();
    const res = await settle(ns.set('k2', 1, { ifNotExists: true }), 3 * ATTEMPT_MS);
    expect(res.operation).toBe('created');
    // An election (up to 2 × ELECTION_MS) plus at most two backoffs of two ticks.
    expect(Date.now() - t0).toBeLessThan(2 * ELECTION_MS + 4 * (FAST.tickMs as number) + 50);
  });
});
