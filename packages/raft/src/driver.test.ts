/**
 * The driver over a loopback transport and a virtual-time scheduler: three
 * members elect a leader, commit proposals (including forwarded ones), serve
 * a ReadIndex read, survive a garbage message, and compact + ship a snapshot.
 */
import {
  type Cancel,
  ClosedError,
  type ConfState,
  type GossipHandler,
  type PeerId,
  type RaftEntry,
  type RaftSnapshot,
  type RequestHandler,
  type Scheduler,
  SeededRandom,
  type Transport,
  UnavailableError,
} from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { RaftDriver, type RaftStateMachine } from './driver.js';
import { MemoryRaftStorage } from './storage.js';

/** Virtual time: callbacks run in time order when the test advances the clock. */
class VirtualTime implements Scheduler {
  nowMs = 0;
  private seq = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];
  after(delayMs: number, fn: () => void): Cancel {
    const t = { at: this.nowMs + delayMs, seq: this.seq++, fn };
    this.timers.push(t);
    return () => {
      this.timers = this.timers.filter((x) => x !== t);
    };
  }
  async advance(ms: number): Promise<void> {
    const end = this.nowMs + ms;
    for (;;) {
      await new Promise<void>((r) => setImmediate(r)); // let microtasks (the driver loops) settle
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.nowMs = next.at;
      next.fn();
    }
    this.nowMs = end;
  }
}

/** Loopback transport between in-process peers; `down` peers are unreachable. */
class Loopback {
  readonly handlers = new Map<PeerId, Map<string, RequestHandler>>();
  readonly down = new Set<PeerId>();
  transport(id: PeerId): Transport {
    const self = this;
    const mine = new Map<string, RequestHandler>();
    this.handlers.set(id, mine);
    return {
      peerId: id,
      on: () => () => {},
      async start() {},
      async stop() {},
      handle: (p, h) => void mine.set(p, h),
      unhandle: (p) => void mine.delete(p),
      async request(peer, protocol, payload) {
        if (self.down.has(peer) || self.down.has(id)) throw new UnavailableError('down');
        const h = self.handlers.get(peer)?.get(protocol);
        if (!h) throw new ClosedError(peer);
        return await h(id, payload);
      },
      subscribe: (_t: string, _h: GossipHandler) => () => {},
      async publish() {},
      peers: () => [...self.handlers.keys()].filter((p) => p !== id),
    };
  }
}

class Log implements RaftStateMachine {
  values: string[] = [];
  conf: ConfState | undefined;
  restores = 0;
  apply(entries: readonly RaftEntry[], conf: ConfState): void {
    for (const e of entries)
      if (e.type === 'normal' && e.data.byteLength) this.values.push(new TextDecoder().decode(e.data));
    this.conf = conf;
  }
  restore(s: RaftSnapshot): void {
    this.restores++;
    this.values = JSON.parse(new TextDecoder().decode(s.data)) as string[];
  }
}

describe('RaftDriver', () => {
  it('elects, replicates, forwards, reads, and installs snapshots over a transport', async () => {
    const time = new VirtualTime();
    const net = new Loopback();
    const ids = ['a', 'b', 'c'];
    const rng = new SeededRandom(11);
    const sms = new Map<string, Log>();
    const reads: string[] = [];
    const drivers = new Map<string, RaftDriver>();
    for (const id of ids) {
      const sm = new Log();
      sms.set(id, sm);
      const d = new RaftDriver({
        raft: { id, random: rng.fork(), voters: ids },
        storage: new MemoryRaftStorage(),
        transport: net.transport(id),
        scheduler: time,
        stateMachine: sm,
        tickMs: 100,
        onReadState: (rs) => reads.push(`${id}:${new TextDecoder().decode(rs.context)}@${rs.index}`),
      });
      drivers.set(id, d);
      await d.start();
    }
    await time.advance(3_000);
    const leaders = [...drivers.values()].filter((d) => d.status().state === 'leader');
    expect(leaders.length).toBe(1);
    const leader = leaders[0] as RaftDriver;
    const follower = [...drivers.values()].find((d) => d !== leader) as RaftDriver;

    leader.propose(new TextEncoder().encode('one'));
    follower.propose(new TextEncoder().encode('two')); // forwarded
    await time.advance(500);
    for (const sm of sms.values()) expect(sm.values.sort()).toEqual(['one', 'two']);

    follower.readIndex(new TextEncoder().encode('r1'));
    await time.advance(500);
    expect(reads).toEqual([`${follower.id}:r1@${leader.status().commit}`]);

    // Garbage on the wire is dropped, not fatal.
    const raw = net.handlers.get(leader.id)?.get('/parley/raft/1');
    await raw?.('x', new Uint8Array([9, 9, 9]));
    expect(leader.droppedMessages).toBe(1);

    // A member misses entries that the leader then compacts away: it gets a snapshot.
    const lagging = follower.id;
    net.down.add(lagging);
    for (let i = 0; i < 5; i++) leader.propose(new TextEncoder().encode(`v${i}`));
    await time.advance(1_000);
    const leaderSm = sms.get(leader.id) as Log;
    await leader.createSnapshot(new TextEncoder().encode(JSON.stringify(leaderSm.values)));
    net.down.delete(lagging);
    await time.advance(3_000);
    expect((sms.get(lagging) as Log).values).toEqual(leaderSm.values);
    expect((sms.get(lagging) as Log).restores).toBe(1);
    expect(drivers.get(lagging)?.status().commit).toBe(leader.status().commit);
    for (const d of drivers.values()) d.stop();
  });

  it('labels a snapshot taken inside apply with the last index of that batch', async () => {
    const time = new VirtualTime();
    const net = new Loopback();
    const sm = new Log();
    const taken: RaftSnapshot[] = [];
    const countThrough = new Map<number, number>();
    const storage = new MemoryRaftStorage();
    let driver: RaftDriver | undefined;
    const snapshotting: RaftStateMachine = {
      apply(entries, conf) {
        sm.apply(entries, conf);
        countThrough.set((entries[entries.length - 1] as RaftEntry).index, sm.values.length);
        const data = new TextEncoder().encode(JSON.stringify(sm.values));
        void driver?.createSnapshot(data).then((s) => s && taken.push(s));
      },
      restore: (s) => sm.restore(s),
    };
    driver = new RaftDriver({
      raft: { id: 'solo', random: new SeededRandom(5), voters: ['solo'] },
      storage,
      transport: net.transport('solo'),
      scheduler: time,
      stateMachine: snapshotting,
      tickMs: 100,
    });
    await driver.start();
    await time.advance(3_000);
    for (let i = 0; i < 4; i++) driver.propose(new TextEncoder().encode(`v${i}`));
    await time.advance(1_000);
    expect(sm.values).toEqual(['v0', 'v1', 'v2', 'v3']);
    const last = taken[taken.length - 1] as RaftSnapshot;
    expect(last.meta.index).toBe(storage.lastIndex());
    expect(JSON.parse(new TextDecoder().decode(last.data))).toEqual(sm.values);
    // Every snapshot holds exactly the values applied through the index it is labelled with.
    for (const s of taken) {
      expect(JSON.parse(new TextDecoder().decode(s.data))).toHaveLength(countThrough.get(s.meta.index) ?? -1);
    }
    driver.stop();
  });
});
