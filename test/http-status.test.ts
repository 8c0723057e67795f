/**
 * One time format per door: `/api/v1/status` answers times as ISO strings,
 * as every other route does (the node API keeps epoch milliseconds). Two real
 * nodes, so an anti-entropy round sets `lastAntiEntropyAt`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNode, type ParleyNode } from '@parley/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, eventually, ISO_MICROS, type Started, startParley } from './http-harness.js';

let p: Started;
let peer: ParleyNode;
let peerDir: string;
beforeAll(async () => {
  p = await startParley({}, { eventual: { antiEntropyMs: 50 } });
  peerDir = await mkdtemp(join(tmpdir(), 'parley-status-peer-'));
  peer = await createNode({
    dataDir: peerDir,
    listen: ['/ip4/127.0.0.1/tcp/0'],
    psk: join(p.dataDir, 'cluster.psk'),
    bootstrap: p.node.addresses,
    eventual: { antiEntropyMs: 50 },
  });
});
afterAll(async () => {
  await peer?.close();
  await p?.close();
  if (peerDir !== undefined) await rm(peerDir, { recursive: true, force: true });
});

describe('/api/v1/status', () => {
  it('answers lastAntiEntropyAt as an ISO string, where node.status() has milliseconds', async () => {
    await p.node.eventual('ae').set('k', 1);
    await peer.eventual('ae').set('j', 2);
    await eventually(
      async () => (await p.node.status()).namespaces.some((n) => n.name === 'ae' && n.lastAntiEntropyAt !== null),
      20_000,
      50,
    );
    const inProcess = (await p.node.status()).namespaces.find((n) => n.name === 'ae');
    expect(typeof inProcess?.lastAntiEntropyAt).toBe('number');
    const res = await api(p.url, 'GET', '/api/v1/status');
    const data = res.body.data as { node: { namespaces: Array<{ name: string; lastAntiEntropyAt: unknown }> } };
    const ae = data.node.namespaces.find((n) => n.name === 'ae');
    expect(ae?.lastAntiEntropyAt).toMatch(ISO_MICROS);
  });
});
