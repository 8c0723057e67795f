/** Bad input and limits: typed errors with stable codes, and nothing written. */
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { code, gate } from './support.js';

export function limitsSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('errors and limits', () => {
    it('typed errors for bad input, nothing written', async () => {
      const ns = (await b.node()).strong('bad');
      await expect(ns.set('k', 1, { ttl: -1 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.set('k', 1, { ttl: 0 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.set('k', 1, { ttl: 30 * 86_400 + 1 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.set('k', 1, { ttl: 1.5 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.set('k', 'x'.repeat(1_100_000))).rejects.toSatisfy(code('value_too_large'));
      await expect(ns.set('', 1)).rejects.toSatisfy(code('invalid_argument'));
      expect(await ns.get('k')).toBeUndefined();
      expect((await ns.list()).items).toEqual([]);
      const max = await ns.set('max', 1, { ttl: 30 * 86_400 });
      expect(max.ttlSeconds).toBe(30 * 86_400);
    });

    it('a value of exactly the limit is taken; one byte more is value_too_large', async () => {
      const limit = 4096;
      const ns = (await b.node({ limits: { maxValueBytes: limit } })).strong('size');
      const fits = 'x'.repeat(limit - 2); // canonical JSON adds the two quotes
      await ns.set('k', fits);
      await expect(ns.set('k', `${fits}y`)).rejects.toSatisfy(code('value_too_large'));
      expect((await ns.get('k'))?.value).toBe(fits);
    });

    it('a full namespace refuses a new key with namespace_full; updates and other namespaces still work', async () => {
      const node = await b.node({ limits: { maxKeysPerNamespace: 3 } });
      const ns = node.strong('full');
      for (const k of ['a', 'b', 'c']) await ns.set(k, k);
      await expect(ns.set('d', 'd')).rejects.toSatisfy(code('namespace_full'));
      await expect(ns.claim('d', 'd')).rejects.toSatisfy(code('namespace_full'));
      expect(await ns.get('d')).toBeUndefined();
      await ns.set('a', 'again');
      await node.strong('other').set('d', 'd');
      await ns.delete('c');
      await ns.set('d', 'd');
      expect((await ns.list()).items.map((e) => e.key).sort()).toEqual(['a', 'b', 'd']);
    });

    it('lock limits: metadata over 16 KiB, TTL over an hour, a wait over the bound', async () => {
      const locks = (await b.node()).locks('ll');
      await expect(locks.acquire('k', { owner: 'o', metadata: 'x'.repeat(17_000) })).rejects.toSatisfy(
        code('value_too_large'),
      );
      await expect(locks.acquire('k', { owner: 'o', ttl: 3601 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(locks.acquire('k', { owner: '' })).rejects.toSatisfy(code('invalid_argument'));
      expect((await locks.inspect('k')).holder).toBeNull();
      const g = await locks.acquire('k', { owner: 'o', ttl: 3600, metadata: { why: 'x'.repeat(1000) } });
      expect(g.ttlSeconds).toBe(3600);
    });
  });
}
