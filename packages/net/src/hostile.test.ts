/**
 * Hostile peers: oversized frames, garbage, stream floods and a peer that
 * stops reading. Each case checks that the victim logs a warning, bounds what
 * it holds, and keeps serving an honest peer throughout.
 */
import { connect as tcpConnect } from 'node:net';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { gossipsub } from '@libp2p/gossipsub';
import { identify } from '@libp2p/identify';
import type { Libp2p, Stream } from '@libp2p/interface';
import { preSharedKey } from '@libp2p/pnet';
import { tcp } from '@libp2p/tcp';
import { multiaddr } from '@multiformats/multiaddr';
import { SeededRandom, testSeed } from '@parley/interface';
import { createLibp2p } from 'libp2p';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrame, WIRE_VERSION } from './frame.js';
import { generatePsk } from './keys.js';
import { createLibp2pTransport, type Libp2pTransport, RPC_PROTOCOL } from './libp2p.js';
import type { NetLogger } from './logger.js';

const seed = testSeed(4242);

class CapturingLogger implements NetLogger {
  readonly warnings: string[] = [];
  debug() {}
  info() {}
  warn(message: string) {
    this.warnings.push(message);
  }
}

async function waitFor(condition: () => boolean, maxMs = 10_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${maxMs} ms (PARLEY_SEED=${seed})`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function closed(stream: Stream, maxMs = 10_000): Promise<void> {
  if (stream.status !== 'open') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('stream stayed open')), maxMs);
    stream.addEventListener('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('libp2p transport under hostile input', () => {
  const psk = generatePsk();
  const log = new CapturingLogger();
  let victim: Libp2pTransport;
  let honest: Libp2pTransport;
  let attacker: Libp2p;
  const limits = {
    maxMessageBytes: 64 * 1024,
    maxStreamsPerPeer: 16,
    maxWriteBufferBytes: 512 * 1024,
    helloTimeoutMs: 500,
  };

  async function honestStillServed(): Promise<void> {
    const reply = await honest.request(victim.peerId, 'echo', new Uint8Array([7, 7]), { timeoutMs: 5_000 });
    expect([...reply]).toEqual([7, 7]);
  }

  async function rpcStream(): Promise<Stream> {
    return attacker.dialProtocol(multiaddr(victim.addresses()[0] as string), RPC_PROTOCOL);
  }

  beforeAll(async () => {
    victim = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, limits, logger: log });
    await victim.start();
    victim.handle('echo', (_from, request) => request);
    victim.handle('bulk', () => new Uint8Array(60 * 1024));
    honest = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      bootstrap: victim.addresses(),
      psk,
      limits,
      logger: log,
    });
    await honest.start();
    await waitFor(() => honest.peers().includes(victim.peerId));
    attacker = await createLibp2p({
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionProtector: preSharedKey({ psk }),
    });
  });

  afterAll(async () => {
    await attacker?.stop();
    await honest?.stop();
    await victim?.stop();
  });

  it('closes a stream whose frame header announces more than the maximum frame size', async () => {
    const before = log.warnings.length;
    const stream = await rpcStream();
    stream.send(encodeFrame({ type: 'hello', version: WIRE_VERSION, protocol: 'echo' }));
    stream.send(new Uint8Array([0x7f, 0xff, 0xff, 0xff, 2, 0, 0, 0, 1]));
    await closed(stream);
    expect(log.warnings.slice(before).some((w) => w.includes('bad frame'))).toBe(true);
    await honestStillServed();
  });

  it('closes a stream that sends a one-way message over maxMessageBytes, or one before its hello', async () => {
    let delivered = 0;
    victim.handle('oneway-sink', () => {
      delivered++;
      return new Uint8Array(0);
    });
    const before = log.warnings.length;
    const stream = await rpcStream();
    stream.send(encodeFrame({ type: 'hello', version: WIRE_VERSION, protocol: 'oneway-sink' }));
    // Within the frame bound (which leaves room for a request's id), yet over the payload limit.
    stream.send(encodeFrame({ type: 'message', payload: new Uint8Array(limits.maxMessageBytes + 1) }));
    await closed(stream);
    expect(log.warnings.slice(before).some((w) => w.includes('oversized one-way message'))).toBe(true);
    const early = await rpcStream();
    early.send(encodeFrame({ type: 'message', payload: new Uint8Array([1]) }));
    await closed(early);
    expect(delivered).toBe(0);
    await honestStillServed();
  });

  it('closes a stream that sends garbage, and drops raw garbage on the TCP port', async () => {
    const rng = new SeededRandom(seed);
    const garbage = new Uint8Array(4096).map(() => rng.int(256));
    garbage[0] = 0; // a small length header, then an unknown frame tag
    garbage[1] = 0;
    garbage[4] = 0xee;
    const before = log.warnings.length;
    const stream = await rpcStream();
    stream.send(garbage);
    await closed(stream);
    expect(log.warnings.length).toBeGreaterThan(before);

    const port = Number(/\/tcp\/(\d+)/.exec(victim.addresses()[0] as string)?.[1]);
    const socket = tcpConnect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(Buffer.from(new Uint8Array(8192).map(() => rng.int(256))));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('victim kept the garbage socket open')), 10_000);
      socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await honestStillServed();
  });

  it('bounds a peer that opens thousands of streams', async () => {
    const attempts = 2000;
    const opened: Stream[] = [];
    let refused = 0;
    await Promise.all(
      Array.from({ length: attempts }, async () => {
        try {
          opened.push(await rpcStream());
        } catch {
          refused++;
        }
      }),
    );
    expect(opened.length + refused).toBe(attempts);
    expect(refused).toBeGreaterThan(attempts / 2);
    expect(victim.stats().inboundStreams).toBeLessThanOrEqual(limits.maxStreamsPerPeer + 1);
    await honestStillServed();
    // Streams that never name their protocol are closed after helloTimeoutMs.
    await waitFor(() => victim.stats().inboundStreams <= 1);
    for (const stream of opened) stream.abort(new Error('done'));
    await honestStillServed();
  });

  it('drops gossip that is not a Parley envelope, logs it, and keeps delivering valid gossip', async () => {
    const got: string[] = [];
    const unsubscribe = victim.subscribe('news', (_from, message) => got.push(new TextDecoder().decode(message)));
    const gossiper = await createLibp2p({
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionProtector: preSharedKey({ psk }),
      services: {
        identify: identify(),
        pubsub: gossipsub({ globalSignaturePolicy: 'StrictNoSign', allowPublishToZeroTopicPeers: true }),
      },
    });
    try {
      await gossiper.dial(multiaddr(victim.addresses()[0] as string));
      const warned = () => log.warnings.includes('dropped an undecodable gossip message');
      let i = 0;
      await waitFor(() => {
        if (warned()) return true;
        if (i++ % 10 === 0) void gossiper.services.pubsub.publish('news', new Uint8Array([0xde, 0xad, i & 0xff]));
        return false;
      });
      expect(got).toEqual([]);
      let n = 0;
      await waitFor(() => {
        if (got.length > 0) return true;
        if (n++ % 10 === 0) void honest.publish('news', new TextEncoder().encode('valid'));
        return false;
      });
      expect(got[0]).toBe('valid');
    } finally {
      unsubscribe();
      await gossiper.stop();
    }
  });

  it('closes the stream of a peer that sends requests but stops reading responses', async () => {
    const stream = await rpcStream();
    // The attacker would buffer without limit; only the victim's own bounds can end this.
    stream.maxReadBufferLength = 1024 * 1024 * 1024;
    stream.pause();
    stream.send(encodeFrame({ type: 'hello', version: WIRE_VERSION, protocol: 'bulk' }));
    const sendMore = async () => {
      for (let i = 1; i <= 2000 && stream.status === 'open'; i++) {
        if (stream.writeStatus !== 'writable') break;
        if (!stream.send(encodeFrame({ type: 'request', id: i, payload: new Uint8Array(1) }))) {
          await stream.onDrain().catch(() => {});
        }
        if (i % 32 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };
    const before = log.warnings.length;
    await sendMore();
    await closed(stream, 20_000);
    expect(log.warnings.slice(before)).toContain('peer is not reading its responses; closing the stream');
    expect(victim.stats().abortedStreams).toBeGreaterThan(0);
    await honestStillServed();
    expect(victim.stats().inboundStreams).toBeLessThanOrEqual(1);
  });
});
