import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterEach, describe, expect, it } from 'vitest';
import { generatePrivateKey, generatePsk } from '../keys.js';
import { createLibp2pTransport, type Libp2pTransport } from '../libp2p.js';
import { type NetLogger, silentLogger } from '../logger.js';
import type { RpcStream } from '../rpc-stream.js';
import { type Handshaken, handshake } from './handshake.js';
import { LeanLink } from './link.js';
import { RecordOpener, RecordSealer } from './seal.js';

const sockets: Socket[] = [];
const transports: Libp2pTransport[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(transports.splice(0).map((t) => t.stop()));
});

/** A connected pair of loopback sockets. */
async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const dialer = tcpConnect({ host: '127.0.0.1', port });
  const listener = await accepted;
  server.close();
  sockets.push(dialer, listener);
  return [dialer, listener];
}

const id = (key: PrivateKey) => peerIdFromPrivateKey(key).toString();

interface Side {
  key?: PrivateKey;
  psk?: Uint8Array | undefined;
  expectPeer?: string;
  admit?: (peer: string) => boolean;
}

async function shake(dialer: Side, listener: Side) {
  const [d, l] = await socketPair();
  const dk = dialer.key ?? (await generatePrivateKey());
  const lk = listener.key ?? (await generatePrivateKey());
  const both = await Promise.allSettled([
    handshake(d, {
      role: 'dialer',
      privateKey: dk,
      psk: dialer.psk,
      expectPeer: dialer.expectPeer ?? id(lk),
      admit: dialer.admit ?? (() => true),
      timeoutMs: 2_000,
    }),
    handshake(l, {
      role: 'listener',
      privateKey: lk,
      psk: listener.psk,
      admit: listener.admit ?? (() => true),
      timeoutMs: 2_000,
    }),
  ]);
  return { sockets: [d, l] as const, keys: [dk, lk] as const, results: both };
}

function linkOf(socket: Socket, h: Handshaken, role: 'dialer' | 'listener', onStream?: (s: RpcStream) => void) {
  const closed: Array<Error | undefined> = [];
  h.opener.allow(1024 * 1024);
  const link = new LeanLink(socket, h.sealer, h.opener, {
    role,
    peer: h.peer,
    maxStreams: 4,
    maxBufferedBytes: 1024 * 1024,
    ...(onStream ? { onStream } : {}),
    onClose: (_link, reason) => closed.push(reason),
  });
  return { link, closed };
}

function nextChunk(stream: RpcStream): Promise<Uint8Array> {
  return new Promise((resolve) => stream.onData(resolve));
}

describe('lean handshake', () => {
  it('proves both identities when the PSKs match', async () => {
    const psk = generatePsk();
    const { results, keys } = await shake({ psk }, { psk });
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    const [d, l] = results as Array<PromiseFulfilledResult<Handshaken>>;
    expect(d?.value.peer).toBe(id(keys[1]));
    expect(l?.value.peer).toBe(id(keys[0]));
  });

  it('fails on both sides when the PSKs differ: the first record does not authenticate', async () => {
    const { results } = await shake({ psk: generatePsk() }, { psk: generatePsk() });
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'decode_error' });
    }
  });

  it('refuses a listener that proves another peer id than the one dialed', async () => {
    const psk = generatePsk();
    const someoneElse = id(await generatePrivateKey());
    const { results } = await shake({ psk, expectPeer: someoneElse }, { psk });
    expect(results[0]).toMatchObject({ status: 'rejected', reason: { code: 'unavailable' } });
  });

  it('refuses a dialer the allow-list does not name', async () => {
    const psk = generatePsk();
    const { results } = await shake({ psk }, { psk, admit: () => false });
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { code: 'unavailable' } });
  });

  it('refuses bytes that are not a lean hello, and a peer that says nothing', async () => {
    const [d, l] = await socketPair();
    const key = await generatePrivateKey();
    const refused = handshake(l, {
      role: 'listener',
      privateKey: key,
      psk: undefined,
      admit: () => true,
      timeoutMs: 2_000,
    });
    d.write(Buffer.alloc(64, 0x41));
    await expect(refused).rejects.toMatchObject({ code: 'decode_error' });
    const [, quiet] = await socketPair();
    await expect(
      handshake(quiet, { role: 'listener', privateKey: key, psk: undefined, admit: () => true, timeoutMs: 100 }),
    ).rejects.toMatchObject({ code: 'timeout' });
  });
});

describe('lean records', () => {
  it('reject a changed, replayed or oversized record before allocating for it', () => {
    const key = Buffer.alloc(32, 7);
    const sealer = new RecordSealer(key);
    const first = sealer.seal(Buffer.from('one'));
    const second = sealer.seal(Buffer.from('two'));

    const ok = new RecordOpener(key, 1024);
    ok.push(Buffer.concat([first, second.subarray(0, 5)]));
    expect(ok.next()?.toString()).toBe('one');
    expect(ok.next()).toBeUndefined(); // incomplete
    ok.push(second.subarray(5));
    expect(ok.next()?.toString()).toBe('two');

    const flipped = Buffer.from(first);
    flipped[6] = (flipped[6] as number) ^ 1;
    const a = new RecordOpener(key, 1024);
    a.push(flipped);
    expect(() => a.next()).toThrow(/authentication/);

    const replay = new RecordOpener(key, 1024);
    replay.push(Buffer.concat([first, first]));
    replay.next();
    expect(() => replay.next()).toThrow(/authentication/);

    const huge = new RecordOpener(key, 1024);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(0xffff_fff0, 0);
    huge.push(header); // a header alone: refused on its length
    expect(() => huge.next()).toThrow(/out of bounds/);
  });
});

describe('lean link', () => {
  async function linked() {
    const psk = generatePsk();
    const {
      results,
      sockets: [d, l],
    } = await shake({ psk }, { psk });
    const [dh, lh] = (results as Array<PromiseFulfilledResult<Handshaken>>).map((r) => r.value);
    const inbound: RpcStream[] = [];
    const dialer = linkOf(d, dh as Handshaken, 'dialer');
    const listener = linkOf(l, lh as Handshaken, 'listener', (s) => inbound.push(s));
    return { d, l, dialer, listener, inbound };
  }

  it('carries streams both ways and closes one without the others', async () => {
    const { dialer, inbound } = await linked();
    const one = dialer.link.openStream();
    const two = dialer.link.openStream();
    one.send(Buffer.from('a'));
    two.send(Buffer.from('b'));
    await new Promise<void>((resolve) => setImmediate(resolve));
    await expect.poll(() => inbound.length).toBe(2);
    const reply = nextChunk(one);
    inbound[0]?.send(Buffer.from('back'));
    expect(Buffer.from(await reply).toString()).toBe('back');
    let closed = false;
    inbound[1]?.onClose(() => {
      closed = true;
    });
    two.abort(new Error('done'));
    await expect.poll(() => closed).toBe(true);
    expect(one.writable).toBe(true);
  });

  it('closes the link and every stream on a tampered record', async () => {
    const { d, dialer, listener } = await linked();
    const stream = dialer.link.openStream();
    let streamClosed = false;
    stream.onClose(() => {
      streamClosed = true;
    });
    stream.send(Buffer.from('first'));
    d.write(Buffer.from([0, 0, 0, 20, ...new Array(20).fill(9)])); // the right length, a wrong tag
    await expect.poll(() => listener.closed.length).toBe(1);
    expect(listener.closed[0]).toMatchObject({ code: 'decode_error' });
    await expect.poll(() => streamClosed).toBe(true);
    expect(dialer.link.open).toBe(false);
  });

  it('bounds the streams a peer opens', async () => {
    const { dialer, inbound } = await linked();
    const streams = Array.from({ length: 4 }, () => dialer.link.openStream());
    expect(() => dialer.link.openStream()).toThrow(/too many streams/);
    for (const s of streams) s.send(Buffer.from('x'));
    await expect.poll(() => inbound.length).toBe(4);
  });
});

describe('lean channel in the transport', () => {
  async function pair(options: { lean?: boolean; leanB?: boolean } = {}) {
    const psk = generatePsk();
    const a = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      lean: options.lean ?? true,
      logger: silentLogger,
    });
    a.handle('echo', (_from, payload) => payload);
    await a.start();
    transports.push(a);
    const b = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      lean: options.leanB ?? true,
      bootstrap: a.addresses(),
      logger: silentLogger,
    });
    await b.start();
    transports.push(b);
    await expect.poll(() => b.peers().includes(a.peerId), { timeout: 10_000 }).toBe(true);
    return { a, b };
  }

  it('keeps one-way messages in order and answers requests over one link', async () => {
    const { a, b } = await pair();
    const got: number[] = [];
    a.handle('log', (_from, payload) => {
      got.push(payload[0] as number);
      return new Uint8Array();
    });
    for (let i = 0; i < 200; i++) await b.send(a.peerId, 'log', new Uint8Array([i]));
    const reply = await b.request(a.peerId, 'echo', new Uint8Array([42]));
    expect([...reply]).toEqual([42]);
    await expect.poll(() => got.length).toBe(200);
    expect(got).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(b.stats().leanLinks).toEqual({ outbound: 1, inbound: 0 });
  });

  it('falls back to libp2p streams when the peer has no lean channel', async () => {
    const { a, b } = await pair({ lean: false });
    const reply = await b.request(a.peerId, 'echo', new Uint8Array([7]));
    expect([...reply]).toEqual([7]);
    expect(b.stats().leanLinks).toEqual({ outbound: 0, inbound: 0 });
    expect(b.stats().outboundChannels).toBe(1);
  });

  it('fails a request in flight with unavailable when the peer goes away', async () => {
    const { a, b } = await pair();
    a.handle('hang', () => new Promise<Uint8Array>(() => {}));
    await b.request(a.peerId, 'echo', new Uint8Array([1])); // the link is up
    const pending = b.request(a.peerId, 'hang', new Uint8Array(), { timeoutMs: 20_000 });
    const failed = expect(pending).rejects.toMatchObject({ code: 'unavailable' });
    await a.stop();
    await failed;
  });
});

describe('lean port under hostile input', () => {
  it('refuses garbage and bounds connections that never finish a handshake, serving an honest peer throughout', async () => {
    const psk = generatePsk();
    const warnings: string[] = [];
    const logger: NetLogger = { debug() {}, info() {}, warn: (message) => warnings.push(message) };
    const victim = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      logger,
      limits: { maxConnections: 8, dialTimeoutMs: 1_000 },
    });
    victim.handle('echo', (_from, payload) => payload);
    await victim.start();
    transports.push(victim);
    const honest = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      bootstrap: victim.addresses(),
      logger: silentLogger,
    });
    await honest.start();
    transports.push(honest);
    await expect.poll(() => honest.peers().includes(victim.peerId), { timeout: 10_000 }).toBe(true);
    await honest.request(victim.peerId, 'echo', new Uint8Array([1]));
    const port = victim.stats().leanPort;
    expect(port).toBeGreaterThan(0);

    const garbage = tcpConnect({ host: '127.0.0.1', port });
    sockets.push(garbage);
    garbage.on('error', () => {});
    garbage.write(Buffer.alloc(4096, 0x5a));
    await expect.poll(() => warnings.includes('refused a lean connection')).toBe(true);

    // More silent connections than the listener admits: the surplus is closed at once, the rest by the handshake timeout.
    let closedByVictim = 0;
    const silent = Array.from({ length: 40 }, () => {
      const s = tcpConnect({ host: '127.0.0.1', port });
      s.on('error', () => {});
      s.on('close', () => closedByVictim++);
      s.resume(); // reads (and drops) the victim's hello, so its close is seen
      sockets.push(s);
      return s;
    });
    await expect.poll(() => closedByVictim, { timeout: 5_000 }).toBeGreaterThan(0);
    const reply = await honest.request(victim.peerId, 'echo', new Uint8Array([2]));
    expect([...reply]).toEqual([2]);
    await expect.poll(() => closedByVictim, { timeout: 5_000 }).toBe(silent.length);
    expect(victim.stats().leanLinks.inbound).toBe(1);
  });
});
