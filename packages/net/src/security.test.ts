import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { afterEach, describe, expect, it } from 'vitest';
import {
  generatePrivateKey,
  generatePsk,
  loadOrCreatePrivateKey,
  loadOrCreatePsk,
  loadPsk,
  peerIdOf,
  validatePsk,
} from './keys.js';
import { createLibp2pTransport, type Libp2pTransport } from './libp2p.js';
import { silentLogger } from './logger.js';

const started: Libp2pTransport[] = [];

async function node(options: { psk?: Uint8Array; allowPeers?: string[]; privateKey?: Uint8Array } = {}) {
  const key = options.privateKey ?? privateKeyToProtobuf(await generatePrivateKey());
  const t = await createLibp2pTransport({
    listen: ['/ip4/127.0.0.1/tcp/0'],
    logger: silentLogger,
    limits: { dialTimeoutMs: 2_500 }, // bounds the wrong-PSK handshake; roomy enough for a loaded machine
    ...options,
    privateKey: key,
  });
  await t.start();
  started.push(t);
  return t;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.stop()));
});

describe('closed cluster', () => {
  it('refuses to create a transport with neither PSK nor allow-list unless told the cluster is open', async () => {
    await expect(createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'] })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    const open = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], openCluster: true });
    expect(open.peerId.length).toBeGreaterThan(0);
  });

  it('keeps out a node with a different pre-shared key', async () => {
    const psk = generatePsk();
    const a = await node({ psk });
    const b = await node({ psk });
    const outsider = await node({ psk: generatePsk() });
    expect(await b.connect(a.addresses()[0] as string)).toBe(a.peerId);
    await expect(outsider.connect(a.addresses()[0] as string)).rejects.toMatchObject({ code: 'unavailable' });
    expect(a.peers()).not.toContain(outsider.peerId);
    expect(a.peers()).toContain(b.peerId);
  });

  it('keeps out a peer id missing from the allow-list, in both directions', async () => {
    const psk = generatePsk();
    const keys = await Promise.all([0, 1, 2].map(() => generatePrivateKey()));
    const ids = keys.map((k) => peerIdOf(k));
    const allowed = [ids[0] as string, ids[1] as string];
    const a = await node({ psk, allowPeers: allowed, privateKey: privateKeyToProtobuf(keys[0]!) });
    const seenByA: string[] = [];
    a.on('peer:connect', (peer) => seenByA.push(peer));
    a.handle('echo', (_from, request) => request);
    const b = await node({ psk, allowPeers: allowed, privateKey: privateKeyToProtobuf(keys[1]!) });
    const stranger = await node({ psk, privateKey: privateKeyToProtobuf(keys[2]!) });
    expect(await b.connect(a.addresses()[0] as string)).toBe(a.peerId);
    // The stranger's dial may complete its half of the handshake before A drops it.
    await stranger.connect(a.addresses()[0] as string).catch(() => undefined);
    await expect(stranger.request(a.peerId, 'echo', new Uint8Array([1]))).rejects.toMatchObject({
      code: 'unavailable',
    });
    await expect(a.connect(stranger.addresses()[0] as string)).rejects.toMatchObject({ code: 'unavailable' });
    expect(a.peers()).toEqual([b.peerId]);
    expect(seenByA).toEqual([b.peerId]);
    expect([...(await b.request(a.peerId, 'echo', new Uint8Array([2])))]).toEqual([2]);
  });
});

describe('key files', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates a PSK once, then reads the same bytes back, with owner-only permissions', async () => {
    dir = await mkdtemp(join(tmpdir(), 'parley-net-'));
    const path = join(dir, 'cluster.psk');
    const first = await loadOrCreatePsk(path);
    const again = await loadOrCreatePsk(path);
    expect(Buffer.from(again).equals(Buffer.from(first))).toBe(true);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(() => validatePsk(new TextEncoder().encode('not a key'))).toThrow(/swarm key/);
    expect(Buffer.from(await loadPsk(path)).equals(Buffer.from(first))).toBe(true);
  });

  it('keeps a node’s peer id across restarts through its key file', async () => {
    dir = await mkdtemp(join(tmpdir(), 'parley-net-'));
    const path = join(dir, 'peer.key');
    const key = await loadOrCreatePrivateKey(path);
    const again = await loadOrCreatePrivateKey(path);
    expect(peerIdOf(again)).toBe(peerIdOf(key));
    const t = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk: generatePsk(), privateKey: again });
    expect(t.peerId).toBe(peerIdOf(key));
  });
});
