/**
 * The y-websocket door with stock `y-websocket` 3.x providers: two nodes, a
 * client on each, a restart, a partition and its heal; awareness across nodes
 * and its expiry.
 */
import { memoryCluster } from '@parley/node/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type * as Y from 'yjs';
import { createServer, type ParleyServer } from '../server.js';
import { awarenessName, type Client, stateVector, synced, until, yClient } from '../testing/yjs-clients.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const AWARENESS_TIMEOUT_MS = 3_000;

async function serve(
  node: Parameters<typeof createServer>[0]['node'],
  port = 0,
): Promise<ParleyServer & { url: string; port: number }> {
  const server = await createServer({
    node,
    port,
    defaultMetrics: false,
    yjs: { awarenessTimeoutMs: AWARENESS_TIMEOUT_MS },
  });
  const url = await server.listen();
  return Object.assign(server, { url: `${url.replace('http:', 'ws:')}/yjs`, port: Number(new URL(url).port) });
}

function client(url: string, room: string): Client {
  const c = yClient(url, room);
  cleanups.push(() => c.destroy());
  return c;
}

/** Keeps a client's awareness fresh, as a moving cursor does (the provider alone renews every 15 s). */
function keepMoving(c: Client, name: string): () => void {
  let n = 0;
  const timer = setInterval(() => c.provider.awareness.setLocalStateField('user', { name, cursor: n++ }), 200);
  c.provider.awareness.setLocalStateField('user', { name, cursor: n++ });
  const stop = () => clearInterval(timer);
  cleanups.push(stop);
  return stop;
}

describe('the y-websocket door', () => {
  it('two stock providers on two nodes converge across a restart and a partition; awareness crosses nodes and expires', async () => {
    const c = memoryCluster();
    let a = await c.start('a');
    const b = await c.start('b');
    let sa = await serve(a);
    const sb = await serve(b);
    cleanups.push(async () => {
      await sa.close();
      await sb.close();
      await a.close();
      await b.close();
    });
    const alice = client(sa.url, 'notes/today');
    const bob = client(sb.url, 'notes/today');
    await Promise.all([synced(alice), synced(bob)]);

    alice.doc.getText('t').insert(0, 'hello');
    await until('bob sees alice', () => bob.text() === 'hello');
    bob.doc.getText('t').insert(5, ' world');
    await until('alice sees bob', () => alice.text() === 'hello world');
    // The node holds the same document as an eventual entry of namespace 'notes'.
    const onB: Y.Doc = await b.eventual('notes').yjs('today');
    expect(onB.getText('t').toString()).toBe('hello world');

    // Awareness: alice's presence reaches bob through the other node.
    keepMoving(alice, 'alice');
    await until('bob sees alice present', () => awarenessName(bob, alice.doc.clientID) === 'alice');

    // Node a restarts; alice edits while it is down, bob keeps editing; alice's provider reconnects by itself.
    await sa.close();
    await c.stop('a');
    await until('alice disconnected', () => !alice.provider.wsconnected);
    alice.doc.getText('t').insert(0, '[a offline] ');
    bob.doc.getText('t').insert(bob.text().length, ' [b while a was down]');
    a = await c.start('a');
    sa = await serve(a, sa.port);
    await synced(alice);
    const all = '[a offline] hello world [b while a was down]';
    await until('both see everything after the restart', () => alice.text() === all && bob.text() === all);
    const removalsBefore = bob.removed.filter((id) => id === alice.doc.clientID).length;
    await until('alice present again at bob', () => awarenessName(bob, alice.doc.clientID) === 'alice');

    // Node b is cut off from a: both sides keep editing; alice's presence expires at bob.
    c.network.partition(['a'], ['b']);
    alice.doc.getText('t').insert(0, 'A1 ');
    bob.doc.getText('t').insert(bob.text().length, ' B1');
    await until(
      'bob sees alice expire',
      () => bob.removed.filter((id) => id === alice.doc.clientID).length > removalsBefore,
      AWARENESS_TIMEOUT_MS * 4,
    );
    expect(awarenessName(bob, alice.doc.clientID)).toBeUndefined();
    expect(alice.text()).toBe(`A1 ${all}`);
    expect(bob.text()).toBe(`${all} B1`);

    // Heal: the nodes sync the document, the providers follow, alice is present again.
    c.network.heal();
    const healed = `A1 ${all} B1`;
    await until('both converge after the heal', () => alice.text() === healed && bob.text() === healed);
    await until('alice present after the heal', () => awarenessName(bob, alice.doc.clientID) === 'alice');
    await until(
      'identical state vectors',
      () => JSON.stringify(stateVector(alice.doc)) === JSON.stringify(stateVector(bob.doc)),
    );
    expect(stateVector(alice.doc)).toEqual(stateVector(bob.doc));
    expect(stateVector(await a.eventual('notes').yjs('today'))).toEqual(stateVector(bob.doc));
  });
});
