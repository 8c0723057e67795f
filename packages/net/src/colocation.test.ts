/**
 * Many nodes on one address. gossipsub's default peer score penalises every
 * peer beyond 10 that connects from the same IP (P6, IP colocation): with 15
 * peers on 127.0.0.1 each scores -125, under the publish (-50) and graylist
 * (-80) thresholds, so a node neither publishes to them nor accepts their
 * gossip, and no mesh forms. Parley runs many nodes per host (agents,
 * workers) and admits peers by the cluster key, so the transport turns P6 off
 * (see the README's security model); this test holds it to that.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePsk } from './keys.js';
import { createLibp2pTransport, type Libp2pTransport } from './libp2p.js';
import { silentLogger } from './logger.js';

/** Spokes on 127.0.0.1 connected to one hub: 5 beyond gossipsub's colocation threshold of 10. */
const SPOKES = 15;
const TOPIC = 'colocated';

async function waitFor(condition: () => boolean, what: string, maxMs = 15_000, poll?: () => void): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${maxMs} ms`);
    poll?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('libp2p gossip with many peers on one IP address', () => {
  const psk = generatePsk();
  let hub: Libp2pTransport;
  const spokes: Libp2pTransport[] = [];
  const received = new Map<string, Set<string>>();

  const subscribe = (t: Libp2pTransport) => {
    const got = new Set<string>();
    received.set(t.peerId, got);
    t.subscribe(TOPIC, (_from, payload) => got.add(new TextDecoder().decode(payload)));
  };

  beforeAll(async () => {
    hub = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, logger: silentLogger });
    subscribe(hub);
    await hub.start();
    await Promise.all(
      Array.from({ length: SPOKES }, async () => {
        const t = await createLibp2pTransport({
          listen: ['/ip4/127.0.0.1/tcp/0'],
          bootstrap: hub.addresses(),
          psk,
          logger: silentLogger,
        });
        subscribe(t);
        await t.start();
        spokes.push(t);
      }),
    );
    await waitFor(() => hub.peers().length === SPOKES, 'every spoke connected to the hub');
  }, 30_000);

  afterAll(async () => {
    await Promise.all([hub, ...spokes].map((t) => t?.stop()));
  });

  it('publishes to every colocated subscriber', async () => {
    let n = 0;
    await waitFor(
      () => spokes.every((s) => [...(received.get(s.peerId) ?? [])].some((m) => m.startsWith('hub-'))),
      'every spoke received the hub’s gossip',
      15_000,
      () => void hub.publish(TOPIC, new TextEncoder().encode(`hub-${n++}`)),
    );
  }, 20_000);

  it('accepts gossip from every colocated peer', async () => {
    const want = new Set(spokes.map((s) => `spoke-${s.peerId}`));
    await waitFor(
      () => [...want].every((m) => received.get(hub.peerId)?.has(m)),
      'the hub received gossip from every spoke',
      15_000,
      () => {
        for (const s of spokes) void s.publish(TOPIC, new TextEncoder().encode(`spoke-${s.peerId}`));
      },
    );
    expect(received.get(hub.peerId)?.size).toBeGreaterThanOrEqual(SPOKES);
  }, 20_000);
});
