import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirLockedError } from './data-dir-lock.js';
import { createNode, internals } from './node.js';
import { eventually, silentNodeLogger } from './testing/testkit.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-node-'));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('createNode on libp2p and LevelDB', () => {
  it('serves eventual writes at once, keeps identity and data across a restart', async () => {
    const dataDir = tempDir();
    const node = await createNode({ dataDir, logger: silentNodeLogger });
    expect(node.addresses.some((a) => a.startsWith('/ip4/127.0.0.1/tcp/'))).toBe(true);
    const ns = node.eventual('deploy');
    await ns.set('rollout', { pct: 25 }, { ttl: 600 });
    await ns.increment('restarts');
    const status = await node.status();
    expect(status).toMatchObject({ peerId: node.peerId, dataDir, peers: [] });
    expect(status.namespaces).toEqual([
      expect.objectContaining({ name: 'deploy', kind: 'eventual', keys: 2, lastAntiEntropyAt: null }),
    ]);
    const peerId = node.peerId;
    await node.close();
    await node.close(); // idempotent

    const again = await createNode({ dataDir, logger: silentNodeLogger });
    expect(again.peerId).toBe(peerId);
    expect((await again.eventual('deploy').get('rollout'))?.value).toEqual({ pct: 25 });
    expect((await again.eventual('deploy').get('restarts'))?.value).toBe(1);
    await again.close();
  });

  it('refuses a second node on the same dataDir with a typed error', async () => {
    const dataDir = tempDir();
    const node = await createNode({ dataDir, logger: silentNodeLogger });
    const err = await createNode({ dataDir, logger: silentNodeLogger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect(err).toMatchObject({ code: 'unavailable' });
    await node.close();
    const after = await createNode({ dataDir, logger: silentNodeLogger });
    await after.close();
  });

  it('two nodes sharing the cluster key gossip over libp2p; an outsider without it cannot join', async () => {
    const da = tempDir();
    const a = await createNode({ dataDir: da, logger: silentNodeLogger });
    const b = await createNode({
      dataDir: tempDir(),
      psk: join(da, 'cluster.psk'),
      bootstrap: a.addresses,
      logger: silentNodeLogger,
    });
    const outsider = await createNode({ dataDir: tempDir(), bootstrap: a.addresses, logger: silentNodeLogger });
    const nb = b.eventual('shared');
    const seen: string[] = [];
    nb.watch({}, (ch) => seen.push(`${ch.key}=${JSON.stringify(ch.entry?.value)} from ${ch.origin === a.peerId}`));
    a.eventual('shared');
    await eventually(() => internals(a).context.transport.peers().includes(b.peerId), 10_000);
    await a.eventual('shared').set('x', 42);
    await eventually(() => seen.length > 0, 10_000);
    expect(seen[0]).toBe('x=42 from true');
    expect(internals(a).context.transport.peers()).not.toContain(outsider.peerId);
    await Promise.all([a.close(), b.close(), outsider.close()]);
  });
});
