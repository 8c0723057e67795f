/** Leases: epochs, renew, fenced state writes, cooperative writes, release, attach. */
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { code, gate } from './support.js';

export function leasesSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('leases', () => {
    it('epoch, renew, fenced state writes, release, attach', async () => {
      const ns = (await b.node()).strong('state');
      const lease = await ns.lease('etl/run', { ttl: 60, holder: 'w1', state: { step: 0 } });
      expect(lease.epoch).toBeGreaterThan(0);
      expect(lease.view).toMatchObject({ holder: 'w1', state: { step: 0 }, namespace: 'state', key: 'etl/run' });
      await expect(ns.lease('etl/run', { ttl: 60, holder: 'w2' })).rejects.toSatisfy(code('lock_held'));
      const renewed = await lease.renew(120);
      expect(renewed.deadlineAt).toBeGreaterThan(lease.view.deadlineAt - 1);
      expect(renewed.epoch).toBe(lease.epoch);
      const written = await lease.updateState({ step: 1 });
      expect(written.state).toEqual({ step: 1 });
      const attached = await ns.attach('etl/run', 'w1');
      expect(attached?.epoch).toBe(lease.epoch);
      expect(attached?.view.state).toEqual({ step: 1 });
      expect(await ns.attach('etl/run', 'w2')).toBeUndefined();
      expect(await ns.attach('never', 'w1')).toBeUndefined();
      await lease.release({ step: 2 });
      await expect(lease.updateState({ step: 3 })).rejects.toSatisfy(code('lease_lost'));
      await expect(lease.renew()).rejects.toSatisfy(code('lease_lost'));
      const next = await ns.lease('etl/run', { ttl: 60, holder: 'w2' });
      expect(next.epoch).toBeGreaterThan(lease.epoch);
      expect(next.view.state).toEqual({ step: 2 });
      // The lease is an entry of kind 'lease' in its namespace.
      expect((await ns.get('etl/run'))?.kind).toBe('lease');
    });

    it('cooperative writes: a state write guarded by the version it read', async () => {
      const ns = (await b.node()).strong('coop');
      const lease = await ns.lease('task', { ttl: 60, holder: 'w1', state: { n: 0 } });
      const v0 = lease.view.version;
      const v1 = await lease.updateState({ n: 1 }, { ifVersion: v0 });
      expect(v1.version).not.toBe(v0);
      expect(lease.view.version).toBe(v1.version);
      await expect(lease.updateState({ n: 99 }, { ifVersion: v0 })).rejects.toSatisfy(code('version_mismatch'));
      // The same holder attached elsewhere (a second process of the worker) writes with the newest version.
      const twin = await ns.attach('task', 'w1');
      const v2 = await twin?.updateState({ n: 2 }, { ifVersion: v1.version });
      expect(v2?.state).toEqual({ n: 2 });
      expect((await ns.get('task'))?.value).toMatchObject({ state: { n: 2 } });
    });

    it('epochs strictly increase across holders', async () => {
      const ns = (await b.node()).strong('epochs');
      let last = 0;
      for (const holder of ['a', 'b', 'c', 'a']) {
        const l = await ns.lease('k', { ttl: 30, holder });
        expect(l.epoch).toBeGreaterThan(last);
        last = l.epoch;
        await l.release();
      }
    });
  });
}
