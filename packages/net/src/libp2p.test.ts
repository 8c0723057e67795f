import { NotLeaderError, ParleyError } from '@parley/interface';
import { afterEach, describe, expect, it } from 'vitest';
import { generatePrivateKey, generatePsk } from './keys.js';
import { createLibp2pTransport, type Libp2pTransport } from './libp2p.js';
import { silentLogger } from './logger.js';

const running: Libp2pTransport[] = [];

async function waitFor(condition: () => boolean, maxMs = 10_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${maxMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()));
});

describe('libp2p transport', () => {
  it('carries a handler error’s details across the wire', async () => {
    const psk = generatePsk();
    const a = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, logger: silentLogger });
    await a.start();
    running.push(a);
    a.handle('write', () => {
      throw new NotLeaderError('12D3KooWleader');
    });
    const b = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      bootstrap: a.addresses(),
      logger: silentLogger,
    });
    await b.start();
    running.push(b);
    await waitFor(() => b.peers().includes(a.peerId));
    const err = await b.request(a.peerId, 'write', new Uint8Array()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParleyError);
    expect(err).toMatchObject({ code: 'not_leader', details: { leaderHint: '12D3KooWleader' } });
  });

  it.each([
    ['libp2p streams, under the half-window rule', false],
    ['the lean channel', true],
  ])('moves megabytes both ways over %s, and a long run of small messages', async (_name, lean) => {
    const psk = generatePsk();
    const a = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, lean, logger: silentLogger });
    await a.start();
    running.push(a);
    a.handle('echo', (_from, payload) => payload);
    const b = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      lean,
      bootstrap: a.addresses(),
      logger: silentLogger,
    });
    await b.start();
    running.push(b);
    await waitFor(() => b.peers().includes(a.peerId));
    // Past yamux's 256 KiB window many times over: the window must keep being granted.
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
    const back = await b.request(a.peerId, 'echo', big);
    expect(Buffer.compare(back, big)).toBe(0); // not toEqual: element-wise over 3 MiB takes seconds
    // Small messages whose updates are held until half a window is consumed.
    for (let round = 0; round < 10; round++) {
      const replies = await Promise.all(
        Array.from({ length: 200 }, (_, i) => b.request(a.peerId, 'echo', new Uint8Array(400).fill(i))),
      );
      expect(replies.every((r, i) => r.length === 400 && r[0] === i)).toBe(true);
    }
    expect(b.stats().leanLinks).toEqual({ outbound: lean ? 1 : 0, inbound: 0 });
    expect(a.stats().leanLinks).toEqual({ outbound: 0, inbound: lean ? 1 : 0 });
  });

  it('redials a bootstrap peer that went away once it is back on the same address', async () => {
    const psk = generatePsk();
    const key = await generatePrivateKey();
    const first = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      privateKey: key,
      logger: silentLogger,
    });
    await first.start();
    const address = first.addresses()[0] as string;
    const listen = address.replace(/\/p2p\/.*$/, '');
    const survivor = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk,
      bootstrap: [listen], // without /p2p/: the transport learns who answers there
      limits: { redialIntervalMs: 100 },
      logger: silentLogger,
    });
    const events: string[] = [];
    survivor.on('peer:connect', (peer) => events.push(`+${peer}`));
    survivor.on('peer:disconnect', (peer) => events.push(`-${peer}`));
    await survivor.start();
    running.push(survivor);
    await waitFor(() => events.includes(`+${first.peerId}`));
    // peers() keeps its list between connection changes (the bootstrap round asks it every 100 ms): each change shows.
    expect(survivor.peers()).toEqual([first.peerId]);
    await first.stop();
    await waitFor(() => events.includes(`-${first.peerId}`));
    expect(survivor.peers()).toEqual([]);

    const again = await createLibp2pTransport({ listen: [listen], psk, privateKey: key, logger: silentLogger });
    again.handle('hello', () => new TextEncoder().encode('back'));
    await again.start();
    running.push(again);
    await waitFor(() => events.filter((e) => e === `+${first.peerId}`).length === 2);
    expect(survivor.peers()).toEqual([first.peerId]);
    const reply = await survivor.request(again.peerId, 'hello', new Uint8Array());
    expect(new TextDecoder().decode(reply)).toBe('back');
  });

  it('rejects a request to a well-formed but unknown peer id with unavailable', async () => {
    const t = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk: generatePsk(),
      logger: silentLogger,
    });
    await t.start();
    running.push(t);
    const stranger = await createLibp2pTransport({ listen: [], psk: generatePsk(), logger: silentLogger });
    await expect(t.request(stranger.peerId, 'echo', new Uint8Array(), { timeoutMs: 3_000 })).rejects.toMatchObject({
      code: 'unavailable',
    });
  });

  it('rejects mdns without the optional package, bad addresses, keys and PSKs as invalid_argument', async () => {
    const t = await createLibp2pTransport({
      listen: ['/ip4/127.0.0.1/tcp/0'],
      psk: generatePsk(),
      mdns: true,
      logger: silentLogger,
    });
    await expect(t.start()).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(
      createLibp2pTransport({ listen: [], psk: generatePsk(), bootstrap: ['not a multiaddr'] }),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(
      createLibp2pTransport({ listen: [], psk: generatePsk(), privateKey: new Uint8Array([1, 2, 3]) }),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(createLibp2pTransport({ listen: [], psk: new Uint8Array(95) })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    expect(() => t.handle('', () => new Uint8Array())).toThrow(/protocol name/);
  });
});
