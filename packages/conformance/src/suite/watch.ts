/** Watch: changes in revision order, prefix filters, resuming after a revision. */
import type { StrongChange } from '@parley/node';
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { gate, until } from './support.js';

export function watchSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('watch', () => {
    it('reports changes with increasing revisions and resumes after a revision', async () => {
      const ns = (await b.node()).strong('w');
      const seen: StrongChange[] = [];
      const stop = ns.watch({ prefix: 'a' }, (c) => seen.push(c));
      await ns.set('a1', 1);
      await ns.set('b1', 1);
      await ns.set('a2', 2);
      await ns.delete('a1');
      await until(() => seen.length >= 3, 5_000, 'three changes');
      stop();
      await ns.set('a3', 3);
      expect(seen.map((c) => [c.type, c.key])).toEqual([
        ['set', 'a1'],
        ['set', 'a2'],
        ['delete', 'a1'],
      ]);
      expect(seen[0]?.entry?.value).toBe(1);
      expect(seen[0]?.namespace).toBe('w');
      for (let i = 1; i < seen.length; i++) {
        expect(seen[i]?.revision).toBeGreaterThan(seen[i - 1]?.revision as number);
      }
      const replay: StrongChange[] = [];
      const stop2 = ns.watch({ fromRevision: seen[1]?.revision }, (c) => replay.push(c));
      await until(() => replay.length >= 2, 5_000, 'the replay');
      stop2();
      expect(replay.map((c) => c.key)).toEqual(['a1', 'a3']);
    });

    it('a watch sees only its namespace, and every change of a busy key in order', async () => {
      const node = await b.node();
      const ns = node.strong('busy');
      const seen: StrongChange[] = [];
      const stop = ns.watch({}, (c) => seen.push(c));
      await node.strong('busy-other').set('k', 'elsewhere');
      for (let i = 0; i < 20; i++) await ns.set('k', i);
      await until(() => seen.length >= 20, 5_000, 'twenty changes');
      stop();
      expect(seen.map((c) => c.entry?.value)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(new Set(seen.map((c) => c.namespace))).toEqual(new Set(['busy']));
    });

    it('a namespace deletion is reported per key', async () => {
      const ns = (await b.node()).strong('gone');
      await ns.set('a', 1);
      await ns.set('b', 2);
      const seen: StrongChange[] = [];
      const stop = ns.watch({}, (c) => seen.push(c));
      await ns.deleteNamespace({ confirm: true });
      await until(() => seen.length >= 2, 5_000, 'two deletes');
      stop();
      expect(seen.map((c) => `${c.type}:${c.key}`).sort()).toEqual(['delete:a', 'delete:b']);
    });
  });
}
