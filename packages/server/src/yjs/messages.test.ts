/**
 * The door's message handling byte by byte (messages built with y-protocols,
 * the reference library): bad input closes with 4400 and changes nothing;
 * size, awareness and buffer bounds; query-awareness; keep-alive and ping.
 */
import type { ParleyNode } from '@parley/node';
import { memoryCluster } from '@parley/node/testing';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { afterEach, describe, expect, it } from 'vitest';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { createServer, type ServerOptions } from '../server.js';
import { awarenessName, type Client, rawClient, synced, until, yClient } from '../testing/yjs-clients.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function start(options: Partial<Omit<ServerOptions, 'node'>> = {}): Promise<{ node: ParleyNode; url: string }> {
  const c = memoryCluster();
  const node = await c.start('a');
  const server = await createServer({ node, port: 0, defaultMetrics: false, ...options });
  const http = await server.listen();
  cleanups.push(async () => {
    await server.close();
    await node.close();
  });
  return { node, url: `${http.replace('http:', 'ws:')}/yjs` };
}

function client(url: string, room: string): Client {
  const c = yClient(url, room);
  cleanups.push(() => c.destroy());
  return c;
}

function raw(...args: Parameters<typeof rawClient>): ReturnType<typeof rawClient> {
  const c = rawClient(...args);
  cleanups.push(() => c.ws.terminate());
  return c;
}

function message(build: (e: encoding.Encoder) => void): Uint8Array {
  const e = encoding.createEncoder();
  build(e);
  return encoding.toUint8Array(e);
}

const updateMessage = (update: Uint8Array) =>
  message((e) => {
    encoding.writeVarUint(e, 0);
    syncProtocol.writeUpdate(e, update);
  });

const awarenessMessage = (update: Uint8Array) =>
  message((e) => {
    encoding.writeVarUint(e, 1);
    encoding.writeVarUint8Array(e, update);
  });

/** The awareness entries of a server message of type 1, as {clientID: state}. */
function awarenessOf(bytes: Uint8Array): Record<number, unknown> {
  const d = decoding.createDecoder(bytes);
  expect(decoding.readVarUint(d)).toBe(1);
  const u = decoding.createDecoder(decoding.readVarUint8Array(d));
  const out: Record<number, unknown> = {};
  const n = decoding.readVarUint(u);
  for (let i = 0; i < n; i++) {
    const id = decoding.readVarUint(u);
    decoding.readVarUint(u);
    out[id] = JSON.parse(decoding.readVarString(u));
  }
  return out;
}

describe('y-websocket messages', () => {
  it('an update truncated in its delete set closes with 4400 and changes nothing (Yjs would apply its first half)', async () => {
    const { node, url } = await start();
    const served = await node.eventual('ns').yjs('k');
    served.getText('t').insert(0, 'before');
    const vector = Y.encodeStateVector(served);
    const source = new Y.Doc();
    source.getText('t').insert(0, 'hello world');
    source.getText('t').delete(0, 3);
    const update = Y.encodeStateAsUpdate(source);
    const c = raw(`${url}/ns/k`);
    await c.opened;
    c.ws.send(updateMessage(update.slice(0, update.length - 2)));
    expect((await c.closed).code).toBe(4400);
    expect(served.getText('t').toString()).toBe('before');
    expect(Y.encodeStateVector(served)).toEqual(vector);
    const reread = await node.eventual('ns').yjs('k');
    expect(reread.getText('t').toString()).toBe('before');
  });

  it('unknown message types, text frames, bad awareness JSON and a bad state vector close with 4400', async () => {
    const { url } = await start();
    const bad: Array<Uint8Array | string> = [
      new Uint8Array([9]),
      new Uint8Array([0, 7, 0]),
      'hello',
      awarenessMessage(
        message((e) => {
          encoding.writeVarUint(e, 1);
          encoding.writeVarUint(e, 5);
          encoding.writeVarUint(e, 1);
          encoding.writeVarString(e, '{not json');
        }),
      ),
      message((e) => {
        encoding.writeVarUint(e, 0);
        encoding.writeVarUint(e, 0);
        encoding.writeVarUint8Array(e, new Uint8Array([5, 255]));
      }),
    ];
    for (const m of bad) {
      const c = raw(`${url}/ns/k`);
      await c.opened;
      c.ws.send(m);
      expect((await c.closed).code).toBe(4400);
    }
  });

  it('a message over maxMessageBytes closes the connection with 1009 and nothing is applied', async () => {
    const { node, url } = await start({ yjs: { maxMessageBytes: 4096 } });
    const source = new Y.Doc();
    source.getText('t').insert(0, 'x'.repeat(8192));
    const c = raw(`${url}/ns/big`);
    await c.opened;
    c.ws.send(updateMessage(Y.encodeStateAsUpdate(source)));
    expect((await c.closed).code).toBe(1009);
    expect((await node.eventual('ns').yjs('big')).getText('t').length).toBe(0);
  });

  it('answers query-awareness with every present state, and relays a state to the sender too', async () => {
    const { url } = await start();
    const alice = client(url, 'ns/k');
    await synced(alice);
    alice.provider.awareness.setLocalStateField('user', { name: 'alice' });
    const c = raw(`${url}/ns/k`);
    await c.opened;
    await until('greeted with the present states', () => c.received.length >= 2);
    expect(awarenessOf(c.received[1]!)).toEqual({ [alice.doc.clientID]: { user: { name: 'alice' } } });
    c.ws.send(new Uint8Array([3]));
    await until('query answered', () => c.received.length >= 3);
    expect(awarenessOf(c.received[2]!)).toEqual({ [alice.doc.clientID]: { user: { name: 'alice' } } });
    // A state from the raw client goes to alice and back to the raw client itself.
    const other = new awarenessProtocol.Awareness(new Y.Doc());
    other.setLocalState({ user: { name: 'raw' } });
    c.ws.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(other, [other.clientID])));
    await until('alice sees raw', () => awarenessName(alice, other.clientID) === 'raw');
    await until('echoed to the sender', () => c.received.length >= 4);
    expect(awarenessOf(c.received[3]!)).toEqual({ [other.clientID]: { user: { name: 'raw' } } });
    other.destroy();
  });

  it('bounds awareness: at most maxAwarenessStates present clients, states of at most maxAwarenessStateBytes', async () => {
    const { url } = await start({ yjs: { maxAwarenessStates: 2, maxAwarenessStateBytes: 64 } });
    const watcher = client(url, 'ns/k');
    await synced(watcher);
    watcher.provider.awareness.setLocalState(null);
    const c = raw(`${url}/ns/k`);
    await c.opened;
    const docs = [1, 2, 3].map(() => new awarenessProtocol.Awareness(new Y.Doc()));
    for (const [i, a] of docs.entries()) a.setLocalState({ n: i });
    const big = new awarenessProtocol.Awareness(new Y.Doc());
    big.setLocalState({ pad: 'x'.repeat(100) });
    c.ws.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(big, [big.clientID])));
    for (const a of docs) c.ws.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(a, [a.clientID])));
    await until('two states present', () => watcher.provider.awareness.getStates().size === 2);
    const ids = [...watcher.provider.awareness.getStates().keys()].sort();
    expect(ids).toEqual([docs[0]!.clientID, docs[1]!.clientID].sort());
    for (const a of [...docs, big]) a.destroy();
  });

  it('sends an empty awareness message on a quiet line, and drops a connection that stops answering pings', async () => {
    const { url } = await start({ yjs: { keepAliveMs: 200, pingIntervalMs: 200 } });
    const quiet = raw(`${url}/ns/k`);
    const deaf = raw(`${url}/ns/k`, { autoPong: false });
    await Promise.all([quiet.opened, deaf.opened]);
    await until('a keep-alive arrived', () => quiet.received.some((m) => m.length === 3 && m.join() === '1,1,0'));
    expect((await deaf.closed).code).toBe(1006);
    expect(quiet.ws.readyState).toBe(quiet.ws.OPEN);
  });

  it('drops a connection that does not read while updates pile up for it (maxBufferedBytes)', async () => {
    const { url } = await start({ yjs: { maxBufferedBytes: 64 * 1024 } });
    const writer = client(url, 'ns/k');
    const stalled = raw(`${url}/ns/k`);
    await Promise.all([synced(writer), stalled.opened]);
    (stalled.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const chunk = 'y'.repeat(256 * 1024);
    for (let i = 0; i < 40 && stalled.ws.readyState === stalled.ws.OPEN; i++) {
      writer.doc.getText('t').insert(0, chunk);
      await new Promise<void>((r) => setTimeout(r, 10));
    }
    (stalled.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    expect((await stalled.closed).code).toBe(1006);
    expect(writer.provider.wsconnected).toBe(true);
  });
});

describe('y-websocket rooms that are still opening', () => {
  it('connections that arrive while the document loads get what the others sent meanwhile', async () => {
    const c = memoryCluster();
    const real = await c.start('a');
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // The node, with its document opens held at a gate (the door calls eventual(ns).yjs/ephemeral only).
    const gated = {
      ...real,
      eventual: (ns: string) => {
        const inner = real.eventual(ns);
        return {
          name: inner.name,
          yjs: async (key: string) => {
            await gate;
            return inner.yjs(key);
          },
          ephemeral: (channel: string) => inner.ephemeral(channel),
        };
      },
    } as unknown as ParleyNode;
    const server = await createServer({ node: gated, port: 0, defaultMetrics: false });
    const url = `${(await server.listen()).replace('http:', 'ws:')}/yjs`;
    cleanups.push(async () => {
      await server.close();
      await real.close();
    });
    const [a, b] = [raw(`${url}/ns/k`), raw(`${url}/ns/k`)];
    await Promise.all([a.opened, b.opened]);
    const presence = [1, 2].map(() => new awarenessProtocol.Awareness(new Y.Doc()));
    const edits = ['from a', 'from b'].map((text) => {
      const d = new Y.Doc();
      d.getText('t').insert(0, text);
      return Y.encodeStateAsUpdate(d);
    });
    for (const [i, conn] of [a, b].entries()) {
      const p = presence[i] as awarenessProtocol.Awareness;
      p.setLocalState({ user: { name: `user ${i}` } });
      conn.ws.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(p, [p.clientID])));
      conn.ws.send(updateMessage(edits[i] as Uint8Array));
    }
    await new Promise((r) => setTimeout(r, 50)); // both queued while the document is held
    expect(a.received).toEqual([]);
    release();
    const saw = (conn: typeof a, id: number) => () =>
      conn.received.some((m) => m[0] === 1 && (awarenessOf(m) as Record<number, unknown>)[id] !== undefined);
    await until("a sees b's presence", saw(a, (presence[1] as awarenessProtocol.Awareness).clientID));
    await until("b sees a's presence", saw(b, (presence[0] as awarenessProtocol.Awareness).clientID));
    const updates = (conn: typeof a) => conn.received.filter((m) => m[0] === 0 && m[1] === 2).length;
    await until("a gets b's edit and b gets a's", () => updates(a) >= 1 && updates(b) >= 1);
    for (const p of presence) p.destroy();
  });
});
