/** `list` (q, filter, sort, cursor pages) and `deleteNamespace` (confirm, pattern). */
import type { JsonValue } from '@parley/node';
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { JumpClock } from '../clock.js';
import { code, gate } from './support.js';

export function listSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('list and deleteNamespace', () => {
    it('q matches keys (any case); filter walks the value; sort and order', async () => {
      // Each write a few ms after the last, so created_at and updated_at never tie.
      const clock = new JumpClock();
      const ns = (await b.node({ clock })).strong('tasks');
      const write = async (key: string, value: JsonValue) => {
        clock.advance(5);
        await ns.set(key, value);
      };
      await write('t1', { status: 'open', attempts: 1, owner: 'ann' });
      await write('t2', { status: 'running', attempts: 3 });
      await write('t3', { status: 'running', attempts: 1, owner: 'bob' });
      await write('x-open', 'plain');
      const keys = async (q: Parameters<typeof ns.list>[0]) => (await ns.list(q)).items.map((e) => e.key);

      expect(await keys({ sortBy: 'key' })).toEqual(['t1', 't2', 't3', 'x-open']);
      expect(await keys({ sortBy: 'key', sortOrder: 'desc' })).toEqual(['x-open', 't3', 't2', 't1']);
      expect(await keys({ sortBy: 'created_at' })).toEqual(['t1', 't2', 't3', 'x-open']);
      await write('t1', { status: 'done', attempts: 2 });
      expect(await keys({ sortBy: 'updated_at', sortOrder: 'desc' })).toEqual(['t1', 'x-open', 't3', 't2']);
      expect(await keys({ q: 'open', sortBy: 'key' })).toEqual(['x-open']);
      expect(await keys({ q: 'T', sortBy: 'key' })).toEqual(['t1', 't2', 't3']);
      expect(
        await keys({ filter: 'status = "running" and (attempts >= 3 or not owner exists)', sortBy: 'key' }),
      ).toEqual(['t2']);
      expect(await keys({ filter: '$ = "plain"' })).toEqual(['x-open']);
      expect(await keys({ filter: 'attempts < 3', sortBy: 'key' })).toEqual(['t1', 't3']);
      const page = await ns.list({ sortBy: 'key', limit: 1 });
      expect(page.items[0]).toMatchObject({ namespace: 'tasks', key: 't1', value: { status: 'done', attempts: 2 } });
    });

    it('cursor pages cover every entry once, in order', async () => {
      const ns = (await b.node()).strong('pages');
      const all = Array.from({ length: 11 }, (_, i) => `k${String(i).padStart(2, '0')}`);
      for (const k of all) await ns.set(k, k);
      for (const sortOrder of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 10; pages++) {
          const page = await ns.list({ sortBy: 'key', sortOrder, limit: 4, ...(cursor ? { cursor } : {}) });
          seen.push(...page.items.map((e) => e.key));
          if (page.nextCursor === null) break;
          cursor = page.nextCursor;
        }
        expect(seen).toEqual(sortOrder === 'asc' ? all : [...all].reverse());
      }
    });

    it('bad queries are invalid_argument', async () => {
      const ns = (await b.node()).strong('badq');
      await ns.set('k', 1);
      await expect(ns.list({ limit: 0 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.list({ limit: 1001 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.list({ filter: 'status = ' })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.list({ filter: 'x'.repeat(1025) })).rejects.toSatisfy(code('invalid_argument'));
      await expect(ns.list({ cursor: 'not-a-cursor' })).rejects.toSatisfy(code('invalid_argument'));
    });

    it('deleteNamespace needs confirm; a pattern limits which keys die', async () => {
      const node = await b.node();
      const ns = node.strong('jobs');
      for (const key of ['job-a', 'job-b', 'keep']) await ns.set(key, key);
      await node.strong('other').set('job-a', 'elsewhere');
      await expect(ns.deleteNamespace({ confirm: false })).rejects.toSatisfy(code('invalid_argument'));
      expect((await ns.list()).items).toHaveLength(3);
      expect(await ns.deleteNamespace({ confirm: true, pattern: 'job-*' })).toEqual({
        deleted_count: 2,
        namespace: 'jobs',
        pattern_used: 'job-*',
      });
      expect((await ns.list()).items.map((e) => e.key)).toEqual(['keep']);
      expect(await ns.deleteNamespace({ confirm: true })).toEqual({
        deleted_count: 1,
        namespace: 'jobs',
        pattern_used: '*',
      });
      expect((await ns.list()).items).toEqual([]);
      expect((await node.strong('other').get('job-a'))?.value).toBe('elsewhere');
    });
  });
}
