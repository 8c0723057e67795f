/**
 * The door on production nodes: LevelDB and libp2p on loopback. Two stock
 * providers on two nodes edit one document and see each other's presence
 * (gossipsub); a client that drops without a goodbye is gone from the other
 * node at once, not after the timeout; the document survives both nodes'
 * restart from their data directories.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import '@parley/net/polyfill';
import { createNode, type NodeOptions } from '@parley/node';
import { internals, type ParleyNodeInternals, silentNodeLogger } from '@parley/node/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type ParleyServer } from '../server.js';
import { awarenessName, type Client, stateVector, synced, until, yClient } from '../testing/yjs-clients.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

interface Running {
  node: ParleyNodeInternals;
  server: ParleyServer;
  url: string;
  stop(): Promise<void>;
}

async function run(options: NodeOptions): Promise<Running> {
  const node = internals(await createNode({ listen: ['/ip4/127.0.0.1/tcp/0'], logger: silentNodeLogger, ...options }));
  const server = await createServer({ node, port: 0, defaultMetrics: false });
  const url = `${(await server.listen()).replace('http:', 'ws:')}/yjs`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server.close();
    await node.close();
  };
  cleanups.push(stop);
  return { node, server, url, stop };
}

function client(url: string, room: string): Client {
  const c = yClient(url, room);
  cleanups.push(() => c.destroy());
  return c;
}

describe('the y-websocket door on libp2p and LevelDB nodes', () => {
  it('syncs and relays presence across nodes, and the document survives restarts', async () => {
    const dirA = mkdtempSync(join(tmpdir(), 'parley-yjs-a-'));
    const dirB = mkdtempSync(join(tmpdir(), 'parley-yjs-b-'));
    cleanups.push(() => {
      rmSync(dirA, { recursive: true, force: true });
      rmSync(dirB, { recursive: true, force: true });
    });
    const a = await run({ dataDir: dirA });
    const b = await run({ dataDir: dirB, psk: join(dirA, 'cluster.psk'), bootstrap: a.node.addresses });
    await until('peers', () => a.node.context.transport.peers().includes(b.node.peerId));

    const alice = client(a.url, 'notes/today');
    const bob = client(b.url, 'notes/today');
    await Promise.all([synced(alice), synced(bob)]);
    alice.doc.getText('t').insert(0, 'from alice');
    bob.doc.getText('t').insert(0, 'from bob; ');
    const both = (t: string) => t.includes('from alice') && t.includes('from bob; ');
    await until('both edits on both sides', () => both(alice.text()) && both(bob.text()));
    expect(alice.text()).toBe(bob.text());

    alice.provider.awareness.setLocalStateField('user', { name: 'alice' });
    await until('bob sees alice', () => awarenessName(bob, alice.doc.clientID) === 'alice');
    // Alice's socket dies without the provider's goodbye: node a removes her and tells node b.
    const removalsBefore = bob.removed.length;
    (alice.provider.ws as unknown as { terminate(): void }).terminate();
    await until('bob sees alice leave', () => bob.removed.slice(removalsBefore).includes(alice.doc.clientID), 5_000);

    const text = bob.text();
    const vector = stateVector(bob.doc);
    await a.stop();
    await b.stop();
    const a2 = await run({ dataDir: dirA });
    const fresh = client(a2.url, 'notes/today');
    await synced(fresh);
    await until('the restarted node serves the document from disk', () => fresh.text() === text);
    expect(stateVector(fresh.doc)).toEqual(vector);
  });
});
