/** Locks: fences, FIFO blocking waits, renew, release, inspect, fenced writes. */
import { FenceStaleError } from '@parley/interface';
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { code, gate, until } from './support.js';

export function locksSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('locks', () => {
    it('FIFO blocking waits, renew, release, inspect, fenced writes', async () => {
      const node = await b.node();
      const locks = node.locks('deploy');
      const ns = node.strong('deploy-state');
      const first = await locks.acquire('rollout', { owner: 'a', ttl: 30, metadata: { why: 'test' } });
      expect(first.fence).toBeGreaterThan(0);
      expect(first).toMatchObject({ namespace: 'deploy', key: 'rollout', owner: 'a', ttlSeconds: 30 });
      expect(first.metadata).toEqual({ why: 'test' });
      await expect(locks.acquire('rollout', { owner: 'b' })).rejects.toSatisfy(code('lock_held'));
      await ns.set('k', 1, { fence: first });
      const waiting = locks.acquire('rollout', { owner: 'b', ttl: 30, wait: 5 });
      await until(async () => (await locks.inspect('rollout')).waiters === 1, 5_000, 'one waiter');
      const info = await locks.inspect('rollout');
      expect(info.holder?.owner).toBe('a');
      expect(info.lastFence).toBe(first.fence);
      const renewed = await locks.renew('rollout', { owner: 'a', fence: first.fence, ttl: 60 });
      expect(renewed).toMatchObject({ fence: first.fence, ttlSeconds: 60 });
      expect(await locks.release('rollout', { owner: 'a', fence: first.fence })).toBe(true);
      const second = await waiting;
      expect(second.owner).toBe('b');
      expect(second.fence).toBeGreaterThan(first.fence);
      await expect(ns.set('k', 2, { fence: first })).rejects.toBeInstanceOf(FenceStaleError);
      await expect(ns.delete('k', { fence: first })).rejects.toSatisfy(code('fence_stale'));
      await ns.set('k', 3, { fence: second });
      expect((await ns.get('k'))?.value).toBe(3);
      // A retried release of the old grant never frees the new holder.
      expect(await locks.release('rollout', { owner: 'a', fence: first.fence })).toBe(false);
      expect((await locks.inspect('rollout')).holder?.owner).toBe('b');
      await expect(locks.renew('rollout', { owner: 'a', fence: first.fence })).rejects.toSatisfy(code('fence_stale'));
    });

    it('renew by someone who does not hold the lock is lock_held naming the holder; after release, lease_lost', async () => {
      const locks = (await b.node()).locks('renewals');
      const held = await locks.acquire('k', { owner: 'a', ttl: 30 });
      for (const wrong of [
        { owner: 'b', fence: held.fence }, // another owner with the holder's fence
        { owner: 'a', fence: held.fence + 1 }, // a fence never granted
      ]) {
        const err = await locks.renew('k', wrong).catch((e: unknown) => e);
        expect(err).toSatisfy(code('lock_held'));
        expect((err as { details: object }).details).toMatchObject({ owner: 'a', expiresAt: held.expiresAt });
        expect((err as Error).message).toContain("held by 'a'");
      }
      expect((await locks.inspect('k')).holder).toMatchObject({ owner: 'a', fence: held.fence });
      expect(await locks.release('k', { owner: 'a', fence: held.fence })).toBe(true);
      await expect(locks.renew('k', { owner: 'a', fence: held.fence })).rejects.toSatisfy(code('lease_lost'));
      await expect(locks.renew('never', { owner: 'a', fence: 1 })).rejects.toSatisfy(code('lease_lost'));
      expect((await locks.inspect('k')).holder).toBeNull();
    });

    it('waiters are granted in arrival order, each with a higher fence', async () => {
      const locks = (await b.node()).locks('fifo');
      const held = await locks.acquire('k', { owner: 'h', ttl: 30 });
      const order: string[] = [];
      const waits: Promise<{ owner: string; fence: number }>[] = [];
      for (const [i, owner] of ['w1', 'w2', 'w3'].entries()) {
        waits.push(
          locks.acquire('k', { owner, ttl: 30, wait: 20 }).then((g) => {
            order.push(g.owner);
            return g;
          }),
        );
        await until(async () => (await locks.inspect('k')).waiters === i + 1, 5_000, `${i + 1} waiters`);
      }
      let fence = held.fence;
      let owner = 'h';
      for (const next of [0, 1, 2]) {
        expect(await locks.release('k', { owner, fence })).toBe(true);
        const g = await (waits[next] as Promise<{ owner: string; fence: number }>);
        expect(g.fence).toBeGreaterThan(fence);
        fence = g.fence;
        owner = g.owner;
      }
      expect(order).toEqual(['w1', 'w2', 'w3']);
      expect((await locks.inspect('k')).waiters).toBe(0);
    });

    it('a wait that runs out fails with lock_held and leaves no waiter behind', async () => {
      const locks = (await b.node()).locks('short');
      const held = await locks.acquire('k', { owner: 'h', ttl: 30 });
      const started = Date.now();
      await expect(locks.acquire('k', { owner: 'w', wait: 1 })).rejects.toSatisfy(code('lock_held'));
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      await until(async () => (await locks.inspect('k')).waiters === 0, 5_000, 'no waiter');
      await locks.release('k', { owner: 'h', fence: held.fence });
      expect((await locks.inspect('k')).holder).toBeNull();
    });

    it('fences of different locks are apart; a fence names its own lock', async () => {
      const node = await b.node();
      const locks = node.locks('two');
      const ns = node.strong('data');
      const a = await locks.acquire('a', { owner: 'o' });
      const bb = await locks.acquire('b', { owner: 'o' });
      await ns.set('x', 1, { fence: a });
      await ns.set('x', 2, { fence: bb });
      await expect(ns.set('x', 3, { fence: { namespace: 'two', key: 'never-held', fence: 1 } })).rejects.toSatisfy(
        (e) => code('fence_stale')(e) || code('lease_lost')(e),
      );
      expect((await ns.get('x'))?.value).toBe(2);
    });
  });
}
