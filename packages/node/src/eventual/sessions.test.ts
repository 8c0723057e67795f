/**
 * Sessions on eventual namespaces (docs/sessions.md, "Eventual namespaces"):
 * a call with a session waits, pulling from the replicas it knows, until its
 * node covers what the session has seen, else fails with `session_behind`;
 * a session's writes carry its frontier as causal deps, so a third replica
 * shows a write only once it holds what the session had seen before it.
 */
import { describe, expect, it } from 'vitest';
import { Session } from '../session/session.js';
import { memoryCluster, settle } from '../testing/testkit.js';

/** Anti-entropy rare enough that only the session's own pulls (and connections) repair. */
const QUIET = { antiEntropyMs: 600_000 };

async function opened(c: ReturnType<typeof memoryCluster>, ids: string[], ns: string, slowGossip: string[] = []) {
  const nodes = [];
  for (const id of ids) {
    const n = await c.start(id, slowGossip.includes(id) ? { ...QUIET, gossipDelayMs: 10_000 } : QUIET);
    await n.eventualModule.namespace(ns).ready;
    nodes.push(n);
  }
  await settle();
  return nodes;
}

describe('eventual sessions', () => {
  it('reads its write on another node before gossip arrives (it pulls), while a plain read there is stale', async () => {
    const c = memoryCluster();
    const [a, b] = await opened(c, ['a', 'b'], 'ryw', ['a']);
    const na = a!.eventual('ryw');
    const nb = b!.eventual('ryw');
    await na.set('k', 0);
    await c.time.advance(10_001); // the first value reaches b
    expect((await nb.get('k'))?.value).toBe(0);
    const s = Session.from();
    await na.set('k', 1, { session: s });
    expect(s.eventual('ryw')).toEqual(new Map([['a', 2]]));
    expect((await nb.get('k'))?.value).toBe(0); // no session: b has not heard yet
    const read = await nb.get('k', { session: s });
    expect(read?.value).toBe(1);
    // Monotonic reads: the session now covers the write wherever it goes next.
    expect(b!.eventualModule.namespace('ryw').replica.covers(s.eventual('ryw') as Map<string, number>)).toBe(true);
    for (const id of ['a', 'b']) await c.stop(id);
  });

  it('fails with session_behind when the writer is unreachable, and writes nothing', async () => {
    const c = memoryCluster();
    const [a, b] = await opened(c, ['a', 'b'], 'cut', ['a']);
    const s = Session.from();
    await a!.eventual('cut').set('k', 1, { session: s });
    c.network.disconnect('a', 'b');
    const nb = b!.eventual('cut');
    const read = nb.get('k', { session: s, timeoutMs: 500 }).catch((e: unknown) => e);
    const write = nb.set('k', 2, { session: s, timeoutMs: 500 }).catch((e: unknown) => e);
    await settle();
    await c.time.advance(600);
    expect(await read).toMatchObject({ code: 'session_behind', retryable: true });
    expect(await write).toMatchObject({ code: 'session_behind' });
    expect(nb.peek('k')).toBeUndefined();
    expect(s.eventual('cut')).toEqual(new Map([['a', 1]])); // a failed call leaves the session as it was
    for (const id of ['a', 'b']) await c.stop(id);
  });

  it('a read observes a tombstone: after a delete the session never reads the deleted value', async () => {
    const c = memoryCluster();
    const [a, b] = await opened(c, ['a', 'b'], 'del', ['a', 'b']);
    const na = a!.eventual('del');
    const nb = b!.eventual('del');
    await na.set('k', 1);
    await c.time.advance(10_001);
    const s = Session.from();
    await na.delete('k');
    expect(await na.get('k', { session: s })).toBeUndefined(); // saw the tombstone's dot
    expect(s.eventual('del')).toEqual(new Map([['a', 2]]));
    expect(nb.peek('k')?.value).toBe(1);
    expect(await nb.get('k', { session: s })).toBeUndefined();
    for (const id of ['a', 'b']) await c.stop(id);
  });

  it('causal: a third replica that receives y first shows it only once it holds x', async () => {
    const c = memoryCluster();
    const [a, b, cc] = await opened(c, ['a', 'b', 'c'], 'causal');
    c.network.disconnect('a', 'c');
    const s = Session.from();
    await a!.eventual('causal').set('x', 1, { session: s });
    // b pulls x from a before writing y: y depends on a's write.
    await b!.eventual('causal').set('y', 2, { session: s });
    await c.time.advance(5); // gossip: y reaches c (a's gossip of x cannot)
    const replicaC = cc!.eventualModule.namespace('causal').replica;
    expect(replicaC.pendingCount).toBe(1);
    const nc = cc!.eventual('causal');
    expect(nc.peek('y')).toBeUndefined();
    expect(nc.peek('x')).toBeUndefined();
    c.network.reconnect('a', 'c'); // the connection's anti-entropy brings x: y is released
    await settle(20);
    await c.time.advance(100);
    expect(nc.peek('x')?.value).toBe(1);
    expect(nc.peek('y')?.value).toBe(2);
    expect(replicaC.pendingCount).toBe(0);
    for (const id of ['a', 'b', 'c']) await c.stop(id);
  });

  it("'majority' works with a session, and an oversized session is invalid_argument", async () => {
    const c = memoryCluster();
    const [a, b] = await opened(c, ['a', 'b'], 'maj');
    const s = Session.from();
    await a!.eventual('maj').set('k', 1, { session: s, consistency: 'majority' });
    expect((await b!.eventual('maj').get('k', { session: s, consistency: 'majority' }))?.value).toBe(1);
    const big = Session.from();
    big.observeEventual(
      'maj',
      Array.from({ length: 300 }, (_, i) => [`o${i}`, 1] as const),
    );
    await expect(b!.eventual('maj').get('k', { session: big })).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(b!.eventual('maj').set('k', 2, { session: big })).rejects.toMatchObject({ code: 'invalid_argument' });
    for (const id of ['a', 'b']) await c.stop(id);
  });
});
