/**
 * `createNode({ strong: etcdStrong(…) })` against a real 3-member etcd on
 * loopback. Without etcd: fails under CI=true, and elsewhere says so loudly
 * and skips.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isParleyError, type ParleyError } from '@parley/interface';
import { createNode, encodeSessionToken, type ParleyNode, Session, type StrongChange } from '@parley/node';
import { silentNodeLogger } from '@parley/node/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etcdStrong } from './node-strong.js';
import { ETCD_MISSING, EtcdCluster, findEtcd } from './testing/etcd-cluster.js';

const bin = findEtcd();
if (!bin) {
  if (process.env.CI === 'true') throw new Error(`CI needs etcd for the node's etcd tests.\n${ETCD_MISSING}`);
  console.error(`\n*** SKIPPING the node's etcd-backed strong tests: ${ETCD_MISSING}\n`);
}

describe.skipIf(!bin)('createNode({ strong: etcdStrong(…) })', () => {
  let cluster: EtcdCluster;
  let dir: string;
  const nodes: ParleyNode[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-node-etcd-'));
    cluster = await EtcdCluster.start(bin as string, join(dir, 'etcd'));
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled(nodes.map((n) => n.close()));
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function node(name: string): Promise<ParleyNode> {
    const n = await createNode({
      dataDir: join(dir, name),
      logger: silentNodeLogger,
      strong: etcdStrong({ endpoints: cluster.endpoints, prefix: '/node-test' }),
    });
    nodes.push(n);
    return n;
  }

  it('two nodes share strong state, docs and watches through etcd; status reports etcd', async () => {
    const a = await node('a');
    const b = await node('b');
    const seen: StrongChange[] = [];
    // A watch "from now on" starts after the newest revision b was told of: let b hear one first.
    expect(await b.strong('jobs').get('cfg')).toBeUndefined();
    const stop = b.strong('jobs').watch({}, (c) => seen.push(c));
    const entry = await a.strong('jobs').set('cfg', { pct: 25 });
    expect((await b.strong('jobs').get('cfg'))?.version).toBe(entry.version);
    await expect(b.strong('jobs').set('cfg', { pct: 1 }, { ifNotExists: true })).rejects.toMatchObject({
      code: 'key_already_exists',
    });
    // doc().update runs through set/get: racing updates from both nodes lose nothing.
    await Promise.all(
      [a, b, a, b].map((n) =>
        n
          .strong('jobs')
          .doc<{ runs: number }>('metrics')
          .update((c) => ({ runs: c.runs + 1 }), { create: { runs: 0 } }),
      ),
    );
    expect((await a.strong('jobs').get('metrics'))?.value).toEqual({ runs: 4 });
    const claims = await Promise.all([a, b].map((n) => n.strong('jobs').claim('etl', { by: n.peerId })));
    expect(claims.filter((c) => c.won)).toHaveLength(1);
    const start = Date.now();
    while (seen.length < 6 && Date.now() - start < 5_000) await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(seen.filter((c) => c.key === 'cfg').map((c) => c.type)).toEqual(['set']);
    expect(seen.filter((c) => c.key === 'metrics')).toHaveLength(4);

    const status = await a.status();
    expect(status.namespaces.find((n) => n.name === 'jobs')).toMatchObject({ kind: 'strong', keys: 3 });
    const cs = await a.cluster.status();
    expect(cs.voters).toHaveLength(3);
    expect(cs.voters.every((v) => v.startsWith('etcd:'))).toBe(true);
    expect(cs.voters).toContain(cs.leader);
    expect(cs.term).toBeGreaterThan(0);
    expect(cs.self).toBe(a.peerId);
    const err = await a.cluster.addVoter('someone').catch((e: ParleyError) => e);
    expect(isParleyError(err, 'invalid_argument')).toBe(true);
    expect((err as ParleyError).message).toContain('managed by etcd');
  }, 30_000);

  it('a session follows etcd revisions: serializable reads below its token are refused, never stale', async () => {
    const a = await node('sa');
    const b = await node('sb');
    const s = Session.from();
    await a.strong('sess').set('k', 1, { session: s });
    const written = s.strong;
    expect(written).toBeGreaterThan(0);
    expect((await b.strong('sess').get('k', { consistency: 'serializable', session: s }))?.value).toBe(1);
    expect(s.strong).toBeGreaterThanOrEqual(written);
    // A failed conditional write leaves the session as it was.
    const before = s.strong;
    await expect(b.strong('sess').set('k', 2, { ifNotExists: true, session: s })).rejects.toMatchObject({
      code: 'key_already_exists',
    });
    expect(s.strong).toBe(before);
    // A token ahead of every etcd member: serializable reads are refused; linearizable ones need no wait.
    const ahead = Session.from(encodeSessionToken({ strong: before + 1_000_000, eventual: new Map() }));
    const err = await b
      .strong('sess')
      .get('k', { consistency: 'serializable', session: ahead, timeoutMs: 1_000 })
      .catch((e: unknown) => e);
    expect(isParleyError(err, 'session_behind')).toBe(true);
    expect((err as ParleyError).details).toMatchObject({ need: before + 1_000_000 });
    expect((await b.strong('sess').get('k', { session: ahead }))?.value).toBe(1);
  }, 30_000);
});
