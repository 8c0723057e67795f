/** Entries: set, get, CAS, create-only, delete, claims and docs. */
import { KeyAlreadyExistsError, VersionMismatchError } from '@parley/interface';
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { code, gate } from './support.js';

export function entriesSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('entries', () => {
    it('set, get, CAS, create-only, delete and list', async () => {
      const jobs = (await b.node()).strong('jobs');
      const created = await jobs.set('cfg', { pct: 25 }, { ttl: 600 });
      expect(created.operation).toBe('created');
      expect(created).toMatchObject({ namespace: 'jobs', key: 'cfg', value: { pct: 25 }, ttlSeconds: 600 });
      expect((await jobs.get('cfg'))?.version).toBe(created.version);

      const updated = await jobs.set('cfg', { pct: 50 }, { ifVersion: created.version });
      expect(updated.operation).toBe('updated');
      expect(updated.version).not.toBe(created.version);
      await expect(jobs.set('cfg', { pct: 75 }, { ifVersion: created.version })).rejects.toBeInstanceOf(
        VersionMismatchError,
      );
      expect((await jobs.get('cfg'))?.value).toEqual({ pct: 50 });

      await expect(jobs.set('cfg', 1, { ifNotExists: true })).rejects.toBeInstanceOf(KeyAlreadyExistsError);
      await jobs.set('other', 2, { ifNotExists: true });
      const page = await jobs.list({ sortBy: 'key' });
      expect(page.items.map((e) => e.key)).toEqual(['cfg', 'other']);
      expect(page.nextCursor).toBeNull();

      expect(await jobs.delete('other')).toBe(true);
      expect(await jobs.delete('other')).toBe(false);
      expect(await jobs.get('other')).toBeUndefined();
    });

    it('set answers the entry itself with operation (the shape of eventual set and of HTTP)', async () => {
      const ns = (await b.node()).strong('shape');
      const created = await ns.set('k', { n: 1 }, { ttl: 60 });
      expect(created.operation).toBe('created');
      expect((await ns.get('k'))?.version).toBe(created.version);
      // The same fields as a read, plus operation, and nothing else that JSON or a spread would see.
      const { operation: _op, ...entry } = created;
      expect(entry).toEqual(await ns.get('k'));
      expect(Object.keys(created).sort()).toEqual([...Object.keys(entry), 'operation'].sort());
      expect(JSON.parse(JSON.stringify(created))).not.toHaveProperty('entry');
      const again = await ns.set('k', 2, { ifVersion: created.version });
      expect(again.operation).toBe('updated');
      // The old shape's field, kept as a hidden alias for code written against it.
      expect(again.entry).toEqual(await ns.get('k'));
      expect(again.entry).not.toHaveProperty('operation');
    });

    it('every write returns a fresh version; times and TTL follow the entry', async () => {
      const ns = (await b.node()).strong('fresh');
      const a = await ns.set('k', 1);
      expect(a.ttlSeconds).toBe(3600);
      expect(a.kind).toBe('value');
      expect(a.expiresAt - a.updatedAt).toBe(3_600_000);
      expect(a.createdAt).toBe(a.updatedAt);
      const b2 = await ns.set('k', 1);
      expect(b2.operation).toBe('updated');
      expect(b2.version).not.toBe(a.version);
      expect(b2.createdAt).toBe(a.createdAt);
      expect(b2.updatedAt).toBeGreaterThanOrEqual(a.updatedAt);
      // A deleted and recreated key gets a version it never had.
      await ns.delete('k');
      const c = await ns.set('k', 1);
      expect(c.operation).toBe('created');
      expect([a.version, b2.version]).not.toContain(c.version);
      // Versions are opaque strings a client hands back, never parsed.
      expect(typeof c.version).toBe('string');
      expect(c.version.length).toBeGreaterThan(0);
    });

    it('conditional deletes and writes on an absent key', async () => {
      const ns = (await b.node()).strong('cond');
      const entry = await ns.set('k', 'v');
      await expect(ns.delete('k', { ifVersion: `${entry.version}x` })).rejects.toSatisfy(code('version_mismatch'));
      expect((await ns.get('k'))?.value).toBe('v');
      expect(await ns.delete('k', { ifVersion: entry.version })).toBe(true);
      await expect(ns.delete('k', { ifVersion: entry.version })).rejects.toSatisfy(code('version_mismatch'));
      await expect(ns.set('k', 'w', { ifVersion: entry.version })).rejects.toSatisfy(code('version_mismatch'));
      expect(await ns.get('k')).toBeUndefined();
      await expect(ns.set('k', 1, { ifVersion: entry.version, ifNotExists: true })).rejects.toSatisfy(
        code('invalid_argument'),
      );
    });

    it('the version mismatch names both versions', async () => {
      const ns = (await b.node()).strong('vm');
      const first = await ns.set('k', 1);
      const second = await ns.set('k', 2);
      const err = await ns.set('k', 3, { ifVersion: first.version }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(VersionMismatchError);
      expect((err as Error).message).toContain(first.version);
      expect((err as Error).message).toContain(second.version);
    });

    it('claims have one winner and tell losers the winner', async () => {
      const ns = (await b.node()).strong('dispatch');
      const [a, c] = await Promise.all([ns.claim('etl', { run: 'a' }), ns.claim('etl', { run: 'b' })]);
      const winners = [a, c].filter((r) => r.won);
      expect(winners).toHaveLength(1);
      const loser = a.won ? c : a;
      expect(loser.value).toEqual(winners[0]?.value);
      expect(loser.version).toBe(winners[0]?.version);
      expect(winners[0]?.entry.kind).toBe('claim');
      // A claim on a key already set loses to the value there.
      await ns.set('taken', 'first');
      const late = await ns.claim('taken', 'second');
      expect(late).toMatchObject({ won: false, value: 'first' });
    });

    it('doc(key).update is an atomic read-modify-write under concurrency', async () => {
      const ns = (await b.node()).strong('metrics');
      const d = ns.doc<{ runs: number }>('daily');
      await Promise.all(
        Array.from({ length: 8 }, () => d.update((c) => ({ runs: c.runs + 1 }), { create: { runs: 0 } })),
      );
      expect((await ns.get('daily'))?.value).toEqual({ runs: 8 });
      const entry = await d.update((c) => ({ runs: c.runs * 10 }));
      expect(entry.value).toEqual({ runs: 80 });
      await expect(ns.doc<{ runs: number }>('absent').update((c) => c)).rejects.toSatisfy(code('key_not_found'));
    });

    it('namespaces are apart', async () => {
      const node = await b.node();
      await node.strong('a').set('k', 'in a');
      expect(await node.strong('b').get('k')).toBeUndefined();
      await node.strong('b').set('k', 'in b');
      expect((await node.strong('a').get('k'))?.value).toBe('in a');
      expect((await node.strong('a').deleteNamespace({ confirm: true })).deleted_count).toBe(1);
      expect((await node.strong('b').get('k'))?.value).toBe('in b');
    });
  });
}
