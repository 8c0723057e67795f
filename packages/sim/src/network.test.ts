import { isParleyError, type PeerId, type Transport } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { type HostContext, Simulation } from './simulation.js';

interface Node {
  t: Transport;
  got: Array<[PeerId, number]>;
  served: number;
  events: string[];
}

const bytes = (n: number) => new Uint8Array([n]);

async function world(ids: string[], seed = 1, network = {}): Promise<{ sim: Simulation; n: (id: string) => Node }> {
  const sim = new Simulation({ seed, network });
  for (const id of ids) {
    sim.addHost(id, async (ctx: HostContext) => {
      const node: Node = { t: ctx.transport, got: [], served: 0, events: [] };
      ctx.transport.handle('echo', (_from, b) => {
        node.served++;
        return b;
      });
      ctx.transport.subscribe('g', (from, m) => node.got.push([from, m[0]!]));
      ctx.transport.on('peer:connect', (p) => node.events.push(`+${p}`));
      ctx.transport.on('peer:disconnect', (p) => node.events.push(`-${p}`));
      await ctx.transport.start();
      return node;
    });
  }
  await sim.runFor(10);
  return { sim, n: (id) => sim.host<Node>(id).app! };
}

/** Publishes one message from each host and returns who heard whom. */
async function gossipMatrix(sim: Simulation, n: (id: string) => Node, ids: string[]): Promise<string[]> {
  for (const id of ids) n(id).got.length = 0;
  for (const id of ids) await n(id).t.publish('g', bytes(1));
  await sim.runFor(200);
  const heard: string[] = [];
  for (const id of ids) for (const [from] of n(id).got) heard.push(`${from}>${id}`);
  return heard.sort();
}

describe('SimTransport over SimNetwork', () => {
  it('answers requests and relays handler errors with their code', async () => {
    const { sim, n } = await world(['a', 'b']);
    n('b').t.handle('boom', () => {
      throw new Error('not a ParleyError');
    });
    let reply: Uint8Array | undefined;
    let err: unknown;
    void n('a')
      .t.request('b', 'echo', bytes(7))
      .then((r) => (reply = r));
    void n('a')
      .t.request('b', 'boom', bytes(0))
      .catch((e) => (err = e));
    await sim.runFor(100);
    expect(reply).toEqual(bytes(7));
    expect(isParleyError(err, 'unavailable')).toBe(true);
    expect(n('a').t.peers()).toEqual(['b']);
    expect(n('a').events).toEqual(['+b']);
  });

  it('times out a request whose reply is lost, on the caller clock', async () => {
    const { sim, n } = await world(['a', 'b']);
    sim.network.partitionOneWay(['b'], ['a']);
    let err: unknown;
    const t0 = sim.nowMs();
    void n('a')
      .t.request('b', 'echo', bytes(1), { timeoutMs: 300 })
      .catch((e) => (err = e));
    await sim.runUntil(() => err !== undefined, 1_000);
    expect(isParleyError(err, 'timeout')).toBe(true);
    expect(sim.nowMs() - t0).toBe(300);
    expect(n('b').served).toBe(1); // the request reached its handler: the reply was lost
  });

  it('bounds requests in flight per peer', async () => {
    const sim = new Simulation({ seed: 5 });
    sim.addHost('b', async (ctx) => {
      ctx.transport.handle('slow', () => new Promise<Uint8Array>(() => {}));
      await ctx.transport.start();
    });
    const a = sim.addHost(
      'a',
      async (ctx) => {
        await ctx.transport.start();
        return ctx.transport;
      },
      { transport: { maxInFlightPerPeer: 2 } },
    );
    await sim.runFor(10);
    const errs: unknown[] = [];
    for (let i = 0; i < 3; i++)
      a.app!.request('b', 'slow', bytes(i), { timeoutMs: 50 }).catch((e: unknown) => errs.push(e));
    await sim.runFor(1);
    expect(errs).toHaveLength(1);
    expect(isParleyError(errs[0], 'unavailable')).toBe(true);
    await sim.runFor(100);
    expect(errs.slice(1).every((e) => isParleyError(e, 'timeout'))).toBe(true);
  });

  it('symmetric partition: no traffic across groups, connections drop, heal restores', async () => {
    const ids = ['a', 'b', 'c', 'd'];
    const { sim, n } = await world(ids);
    sim.network.partition(['a', 'b'], ['c', 'd']);
    await sim.runFor(1);
    expect(n('a').t.peers()).toEqual(['b']);
    expect(await gossipMatrix(sim, n, ids)).toEqual(['a>b', 'b>a', 'c>d', 'd>c']);
    sim.network.heal();
    await sim.runFor(1);
    expect(n('a').t.peers()).toEqual(['b', 'c', 'd']);
    expect(n('a').events).toEqual(['+b', '+c', '+d', '-c', '-d', '+c', '+d']);
    expect(await gossipMatrix(sim, n, ids)).toHaveLength(12);
  });

  it('asymmetric partition: one direction only, connection stays up', async () => {
    const ids = ['a', 'b', 'c'];
    const { sim, n } = await world(ids);
    sim.network.partitionOneWay(['a'], ['b', 'c']);
    expect(await gossipMatrix(sim, n, ids)).toEqual(['b>a', 'b>c', 'c>a', 'c>b']);
    expect(n('a').t.peers()).toEqual(['b', 'c']);
  });

  it('isolate-one and majority/minority', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const { sim, n } = await world(ids);
    sim.network.isolate('c');
    const iso = await gossipMatrix(sim, n, ids);
    expect(iso.some((h) => h.includes('c'))).toBe(false);
    expect(iso).toHaveLength(12);
    sim.network.heal();
    sim.network.partition(['a', 'b', 'c'], ['d', 'e']);
    expect(await gossipMatrix(sim, n, ids)).toEqual(['a>b', 'a>c', 'b>a', 'b>c', 'c>a', 'c>b', 'd>e', 'e>d']);
  });

  it('bridge: the ends cannot talk, the bridge hears both', async () => {
    const ids = ['a', 'b', 'c'];
    const { sim, n } = await world(ids);
    sim.network.bridge('a', 'b', 'c');
    expect(await gossipMatrix(sim, n, ids)).toEqual(['a>b', 'b>a', 'b>c', 'c>b']);
    let err: unknown;
    await n('a')
      .t.request('c', 'echo', bytes(1))
      .catch((e) => (err = e));
    expect(isParleyError(err, 'unavailable')).toBe(true);
  });

  it('hold keeps messages until release, then delivers them in order', async () => {
    const { sim, n } = await world(['a', 'b']);
    sim.network.hold('a', 'b');
    for (let i = 0; i < 5; i++) await n('a').t.publish('g', bytes(i));
    await sim.runFor(1_000);
    expect(n('b').got).toEqual([]);
    sim.network.release('a', 'b');
    await sim.runFor(100);
    expect(n('b').got.map(([, v]) => v)).toEqual([0, 1, 2, 3, 4]);
  });

  it('loss, duplication and reordering follow the configured rates', async () => {
    const { sim, n } = await world(['a', 'b'], 11, {
      lossRate: 0.2,
      duplicateRate: 0.2,
      reorder: true,
      latency: { minMs: 1, meanMs: 20, maxMs: 200 },
    });
    for (let i = 0; i < 200; i++) await n('a').t.publish('g', bytes(i % 256));
    await sim.runFor(1_000);
    const got = n('b').got.map(([, v]) => v);
    const distinct = new Set(got).size;
    expect(distinct).toBeGreaterThan(130);
    expect(distinct).toBeLessThan(190);
    expect(got.length).toBeGreaterThan(distinct); // duplicates
    const sorted = [...got].sort((x, y) => x - y);
    expect(got).not.toEqual(sorted); // reordered
    const stats = sim.network.stats();
    expect(stats.dropped).toBeGreaterThan(0);
    expect(stats.duplicated).toBeGreaterThan(0);
  });

  it('FIFO per link when reordering is off', async () => {
    const { sim, n } = await world(['a', 'b'], 12, { latency: { minMs: 1, meanMs: 20, maxMs: 200 } });
    for (let i = 0; i < 100; i++) await n('a').t.publish('g', bytes(i));
    await sim.runFor(1_000);
    expect(n('b').got.map(([, v]) => v)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('a crashed peer disconnects, fails requests in flight, and reconnects on restart', async () => {
    const { sim, n } = await world(['a', 'b']);
    n('b').t.handle('slow', () => new Promise<Uint8Array>(() => {}));
    let err: unknown;
    n('a')
      .t.request('b', 'slow', bytes(1), { timeoutMs: 10_000 })
      .catch((e) => (err = e));
    await sim.runFor(20);
    sim.host('b').crash();
    await sim.runFor(1);
    expect(isParleyError(err, 'unavailable')).toBe(true);
    expect(n('a').t.peers()).toEqual([]);
    sim.host('b').restart();
    await sim.runFor(10);
    expect(n('a').t.peers()).toEqual(['b']);
    expect(n('a').events).toEqual(['+b', '-b', '+b']);
  });

  it('a paused host receives nothing until it resumes', async () => {
    const { sim, n } = await world(['a', 'b']);
    sim.host('b').pause();
    await n('a').t.publish('g', bytes(3));
    await sim.runFor(500);
    expect(n('b').got).toEqual([]);
    sim.host('b').resume();
    await sim.runFor(1);
    expect(n('b').got).toEqual([['a', 3]]);
  });
});
