/**
 * TTL on the node's clock: a JumpClock moves time forward, so entries, claims,
 * locks and leases run out without the test waiting. Expired means absent for
 * every read and conditional write, before any cleanup runs.
 */
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { JumpClock } from '../clock.js';
import { code, gate, passTime } from './support.js';

export function ttlSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('TTL', () => {
    it('an expired entry is absent to get, list, CAS and create-only', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const ns = node.strong('ttl');
      const short = await ns.set('short', 'soon gone', { ttl: 10 });
      await ns.set('long', 'stays', { ttl: 100 });
      expect(short.expiresAt - short.updatedAt).toBe(10_000);
      await passTime(node, clock, 5_000);
      expect((await ns.get('short'))?.value).toBe('soon gone');
      await passTime(node, clock, 6_000);
      expect(await ns.get('short')).toBeUndefined();
      expect((await ns.list()).items.map((e) => e.key)).toEqual(['long']);
      await expect(ns.set('short', 'x', { ifVersion: short.version })).rejects.toSatisfy(code('version_mismatch'));
      expect(await ns.delete('short')).toBe(false);
      const again = await ns.set('short', 'back', { ifNotExists: true });
      expect(again.operation).toBe('created');
      expect(again.version).not.toBe(short.version);
    });

    it('a rewrite restarts the TTL', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const ns = node.strong('rewrite');
      await ns.set('k', 1, { ttl: 10 });
      await passTime(node, clock, 8_000);
      await ns.set('k', 2, { ttl: 10 });
      await passTime(node, clock, 8_000);
      expect((await ns.get('k'))?.value).toBe(2);
      await passTime(node, clock, 3_000);
      expect(await ns.get('k')).toBeUndefined();
    });

    it('an expired claim can be won again', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const ns = node.strong('claims');
      const first = await ns.claim('job', 'a', { ttl: 10 });
      expect(first.won).toBe(true);
      expect((await ns.claim('job', 'b', { ttl: 10 })).won).toBe(false);
      await passTime(node, clock, 11_000);
      const second = await ns.claim('job', 'b', { ttl: 10 });
      expect(second).toMatchObject({ won: true, value: 'b' });
      expect(second.version).not.toBe(first.version);
    });

    it('a lock whose holder stops renewing passes to the next owner with a higher fence', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const locks = node.locks('cron');
      const ns = node.strong('out');
      const dead = await locks.acquire('nightly', { owner: 'crashed', ttl: 10 });
      await passTime(node, clock, 5_000);
      await locks.renew('nightly', { owner: 'crashed', fence: dead.fence, ttl: 10 });
      await passTime(node, clock, 6_000);
      await expect(locks.acquire('nightly', { owner: 'survivor' })).rejects.toSatisfy(code('lock_held'));
      await passTime(node, clock, 5_000);
      expect((await locks.inspect('nightly')).holder).toBeNull();
      // Renewing an expired grant (nobody has the lock since) says it ended: lease_lost, not key_not_found.
      const expired = await locks.renew('nightly', { owner: 'crashed', fence: dead.fence }).catch((e: unknown) => e);
      expect(expired).toSatisfy(code('lease_lost'));
      expect((expired as { details: object }).details).toMatchObject({ owner: 'crashed', fence: dead.fence });
      const next = await locks.acquire('nightly', { owner: 'survivor', ttl: 30 });
      expect(next.fence).toBeGreaterThan(dead.fence);
      await expect(ns.set('k', 'late', { fence: dead })).rejects.toSatisfy(code('fence_stale'));
      await expect(locks.renew('nightly', { owner: 'crashed', fence: dead.fence })).rejects.toSatisfy(
        code('fence_stale'),
      );
      expect(await locks.release('nightly', { owner: 'crashed', fence: dead.fence })).toBe(false);
      expect((await locks.inspect('nightly')).holder?.owner).toBe('survivor');
    });

    it('a lease past its deadline can be taken over with a higher epoch; the old holder has lost it', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const ns = node.strong('leases');
      const old = await ns.lease('run', { ttl: 10, holder: 'w1', state: { step: 1 } });
      await passTime(node, clock, 11_000);
      expect(await ns.attach('run', 'w1')).toBeUndefined();
      const taken = await ns.lease('run', { ttl: 10, holder: 'w2' });
      expect(taken.epoch).toBeGreaterThan(old.epoch);
      expect(taken.view.state).toEqual({ step: 1 });
      await expect(old.updateState({ step: 'late' })).rejects.toSatisfy(code('lease_lost'));
      await expect(old.renew()).rejects.toSatisfy(code('lease_lost'));
      expect((await ns.attach('run', 'w2'))?.view.state).toEqual({ step: 1 });
    });
  });
}
