/**
 * The node a simulated test gets is the whole ParleyNode API: the type of what
 * `cluster.node(i)` returns is ParleyNode, no member of it (or of the objects it
 * hands out) is optional, and at run time the recorded node has every member
 * (a wrapper built with a cast could leave one out: `doc` was). Then the CAS
 * retry loop of `strong(ns).doc()` from three nodes at once, recorded and checked.
 */
import type { Cluster, EventualNamespace, Lease, Locks, ParleyNode, StrongDoc, StrongNamespace } from '@parley/node';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { type SimCluster, simulate } from './index.js';
import type { Recorder } from './recorder.js';

/** The members of T that may be left out. */
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

const NODE = [
  'peerId',
  'addresses',
  'eventual',
  'strong',
  'locks',
  'cluster',
  'events',
  'status',
  'health',
  'close',
] as const;
const STRONG = [
  'name',
  'set',
  'get',
  'delete',
  'list',
  'deleteNamespace',
  'claim',
  'lease',
  'attach',
  'doc',
  'watch',
  'queue',
] as const;
const EVENTUAL = [
  'name',
  'set',
  'get',
  'peek',
  'delete',
  'increment',
  'list',
  'watch',
  'changes',
  'yjs',
  'automerge',
  'ephemeral',
] as const;
const LOCKS = ['name', 'acquire', 'renew', 'release', 'inspect'] as const;
const LEASE = ['namespace', 'key', 'holder', 'epoch', 'view', 'renew', 'updateState', 'release'] as const;

describe('the simulated node is the whole ParleyNode API', () => {
  it('by type: ParleyNode itself, every member required, the member lists below complete', () => {
    expectTypeOf<ReturnType<SimCluster['node']>>().toEqualTypeOf<ParleyNode>();
    expectTypeOf<Recorder['wrapNode']>().returns.toEqualTypeOf<ParleyNode>();
    expectTypeOf<ReturnType<ParleyNode['strong']>>().toEqualTypeOf<StrongNamespace>();
    expectTypeOf<OptionalKeys<ParleyNode>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalKeys<StrongNamespace>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalKeys<EventualNamespace>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalKeys<Locks>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalKeys<Lease>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalKeys<Cluster>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalKeys<StrongDoc<{ n: number }>>>().toEqualTypeOf<never>();
    expectTypeOf<Exclude<keyof ParleyNode, (typeof NODE)[number]>>().toEqualTypeOf<never>();
    expectTypeOf<Exclude<keyof StrongNamespace, (typeof STRONG)[number]>>().toEqualTypeOf<never>();
    expectTypeOf<Exclude<keyof EventualNamespace, (typeof EVENTUAL)[number]>>().toEqualTypeOf<never>();
    expectTypeOf<Exclude<keyof Locks, (typeof LOCKS)[number]>>().toEqualTypeOf<never>();
    expectTypeOf<Exclude<keyof Lease, (typeof LEASE)[number]>>().toEqualTypeOf<never>();
  });

  it('at run time: every member is there, on the node and on what it hands out', async () => {
    await simulate({ nodes: 2, voters: 1, seed: 21 }, async (cluster) => {
      const node = cluster.node(1);
      const has = (o: object, names: readonly string[]) =>
        expect(names.filter((n) => (o as Record<string, unknown>)[n] === undefined)).toEqual([]);
      has(node, NODE);
      has(node.strong('s'), STRONG);
      has(node.eventual('e'), EVENTUAL);
      has(node.locks('l'), LOCKS);
      has(node.strong('s').doc('d'), ['update']);
      const lease = await node.strong('s').lease('job', { ttl: 30, holder: 'w' });
      has(lease, LEASE);
      await lease.release();
    });
  });

  it("strong(ns).doc's CAS retry loop works from three nodes at once, and is recorded and checked", async () => {
    const result = await simulate({ nodes: 3, voters: 3, seed: 22 }, async (cluster) => {
      const bump = (i: number) => cluster.node(i).strong('jobs').doc<{ runs: number }>('counter');
      let done = 0;
      for (const i of [0, 1, 2]) {
        void (async () => {
          for (let k = 0; k < 4; k++) await bump(i).update((c) => ({ runs: c.runs + 1 }), { create: { runs: 0 } });
          done++;
        })();
      }
      expect(await cluster.runUntil(() => done === 3, '60s')).toBe(true);
      const entry = await cluster.node(0).strong('jobs').get('counter');
      expect(entry?.value).toEqual({ runs: 12 });
      cluster.expectLinearizable();
    });
    expect(result.history).toContain(`strong('jobs').set`);
  });
});
