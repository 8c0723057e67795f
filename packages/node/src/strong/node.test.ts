import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isParleyError } from '@parley/interface';
import { loadOrCreatePrivateKey, peerIdOf } from '@parley/net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ParleyNode } from '../api.js';
import { createNode } from '../node.js';
import { eventually, silentNodeLogger } from '../testing/testkit.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-strong-'));
  dirs.push(d);
  return d;
}
const nodes: ParleyNode[] = [];
afterEach(async () => {
  await Promise.allSettled(nodes.splice(0).map((n) => n.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const FAST = { tickMs: 20, electionTimeoutTicks: 10, callTimeoutMs: 8_000 };

describe('strong namespaces through createNode (libp2p, LevelDB)', () => {
  it('a lone node is a group of one: strong writes, locks and leases work offline and survive a restart', async () => {
    const dataDir = tempDir();
    const node = await createNode({ dataDir, logger: silentNodeLogger });
    nodes.push(node);
    const jobs = node.strong('jobs');
    const entry = await jobs.set('cfg', { pct: 25 });
    await jobs.set('cfg', { pct: 50 }, { ifVersion: entry.version });
    const lock = await node.locks('deploy').acquire('rollout', { owner: 'w1', ttl: 30 });
    await jobs.set('fenced', 1, { fence: lock });
    const lease = await jobs.lease('run', { ttl: 60, holder: 'w1' });
    const status = await node.status();
    expect(status.namespaces.find((n) => n.name === 'jobs')).toMatchObject({ kind: 'strong', keys: 3 });
    expect((await node.cluster.status()).leader).toBe(node.peerId);
    await node.close();
    nodes.pop();

    const again = await createNode({ dataDir, logger: silentNodeLogger });
    nodes.push(again);
    const cfg = await again.strong('jobs').get('cfg');
    expect(cfg?.value).toEqual({ pct: 50 });
    // Fences and epochs keep increasing across the restart.
    await expect(again.locks('deploy').acquire('rollout', { owner: 'w2' })).rejects.toSatisfy((e) =>
      isParleyError(e, 'lock_held'),
    );
    await again.locks('deploy').release('rollout', { owner: 'w1', fence: lock.fence });
    const next = await again.locks('deploy').acquire('rollout', { owner: 'w2' });
    expect(next.fence).toBeGreaterThan(lock.fence);
    const attached = await again.strong('jobs').attach('run', 'w1');
    expect(attached?.epoch).toBe(lease.epoch);
  });

  it('three voters on libp2p: any node calls, a non-voter forwards to the leader', async () => {
    const d = [tempDir(), tempDir(), tempDir(), tempDir()];
    const ids = await Promise.all(d.map(async (dir) => peerIdOf(await loadOrCreatePrivateKey(join(dir, 'peer.key')))));
    const voters = ids.slice(0, 3);
    const start = (i: number, bootstrap: string[]) =>
      createNode({
        dataDir: d[i],
        psk: i === 0 ? undefined : join(d[0] as string, 'cluster.psk'),
        bootstrap,
        logger: silentNodeLogger,
        raft: { ...FAST, voters },
      });
    const a = await start(0, []);
    nodes.push(a);
    const b = await start(1, a.addresses);
    nodes.push(b);
    const c = await start(2, [...a.addresses, ...b.addresses]);
    nodes.push(c);
    const outsider = await start(3, [...a.addresses, ...b.addresses, ...c.addresses]);
    nodes.push(outsider);
    expect(outsider.peerId).toBe(ids[3]);
    // Every voter knows the leader before the outsider calls: a member that has known no leader
    // for an election timeout refuses at once with `unavailable` (fail fast), and one that has
    // not yet heard the new leader's first heartbeat, under load, may do just that.
    await eventually(async () => {
      const views = await Promise.all([a, b, c].map(async (n) => (await n.cluster.status()).leader));
      return views.every((l) => l !== null && l === views[0]);
    }, 15_000);
    const w = await outsider.strong('ns').set('k', 1);
    const r = await b.strong('ns').set('k', 2, { ifVersion: w.version });
    expect((await c.strong('ns').get('k'))?.version).toBe(r.version);
    expect((await outsider.strong('ns').get('k'))?.value).toBe(2);
    const st = await a.cluster.status();
    expect(st.voters).toEqual([...voters].sort());
  });
});
