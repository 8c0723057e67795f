/**
 * A big deleteNamespace on the built-in group is a sequence of bounded
 * commands: no single apply (one synchronous stretch of the event loop that
 * runs Raft) deletes more than DELETE_NAMESPACE_CHUNK keys or emits more
 * than that many changes. Work is counted, not timed: changes delivered to a
 * member's watch within one macrotask, and keys deleted per applied command.
 */
import type { Command } from '@parley/coord';
import { afterEach, describe, expect, it } from 'vitest';
import type { StrongChange } from '../api.js';
import { DELETE_NAMESPACE_CHUNK } from './namespace.js';
import { FAST, MemoryGroup } from './testing.js';

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

describe('deleteNamespace on the built-in group', () => {
  it('bounds the keys deleted and the changes emitted per synchronous stretch, and deletes them all', async () => {
    const keysPerCommand: number[] = [];
    group = new MemoryGroup(['solo'], FAST);
    const m = await group.start('solo', {
      hooks: {
        onApply(_index, _term, command: Command | undefined, output) {
          if (command?.op.type === 'delete_namespace' && output.result.ok) {
            const v = output.result.value;
            if (v.type === 'namespace_deleted') keysPerCommand.push(v.deleted_count);
          }
        },
      },
    });
    const ns = m.module.strong('big');
    const KEYS = 2 * DELETE_NAMESPACE_CHUNK + 500;
    const key = (i: number) => `job/${String(i).padStart(5, '0')}`;
    for (let i = 0; i < KEYS; i += 16) {
      await Promise.all(Array.from({ length: Math.min(16, KEYS - i) }, (_, j) => ns.set(key(i + j), i + j)));
    }
    await ns.set('keep', 1);

    // Changes that reach the watch in one macrotask: they were emitted by one synchronous stretch.
    const seen: StrongChange[] = [];
    let inTurn = 0;
    let longestTurn = 0;
    let flushing = false;
    const stop = ns.watch({}, (c) => {
      seen.push(c);
      inTurn++;
      longestTurn = Math.max(longestTurn, inTurn);
      if (!flushing) {
        // The stretch ends at the first macrotask after it (a timer scheduled now runs before any later one).
        flushing = true;
        const reset = () => {
          inTurn = 0;
          flushing = false;
        };
        const timer = setTimeout(() => {
          clearImmediate(immediate);
          reset();
        }, 0);
        const immediate = setImmediate(() => {
          clearTimeout(timer);
          reset();
        });
      }
    });
    const r = await ns.deleteNamespace({ confirm: true, pattern: 'job/*' });
    stop();

    expect(r).toEqual({ deleted_count: KEYS, namespace: 'big', pattern_used: 'job/*' });
    expect(seen.map((c) => c.key)).toEqual(Array.from({ length: KEYS }, (_, i) => key(i)));
    expect(seen.every((c) => c.type === 'delete')).toBe(true);
    expect(longestTurn).toBeLessThanOrEqual(DELETE_NAMESPACE_CHUNK);
    expect(keysPerCommand).toEqual([DELETE_NAMESPACE_CHUNK, DELETE_NAMESPACE_CHUNK, 500]);
    expect(new Set(seen.map((c) => c.revision)).size).toBe(3);
    expect((await ns.get('keep'))?.value).toBe(1);
    expect((await ns.list({ q: 'job/' })).items).toEqual([]);
  }, 60_000);
});
