/**
 * Local reads: `peek` beside `get`, values handed out read-only instead of
 * copied, the entry `peek` keeps per register, and the clock reads share
 * within one synchronous turn (namespace.ts readNow, entry.ts).
 */
import { describe, expect, it } from 'vitest';
import { memoryCluster } from '../testing/testkit.js';

describe('eventual local reads', () => {
  it('peek answers synchronously what get resolves to; unavailable while opening, closed after close', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('reads');
    expect(() => ns.peek('k')).toThrow(expect.objectContaining({ code: 'unavailable' }));
    await ns.set('k', { n: 1, tags: ['a'] }, { ttl: 60 });
    const got = await ns.get('k');
    const peeked = ns.peek('k');
    expect(peeked).toEqual(got);
    expect(ns.peek('absent')).toBeUndefined();
    expect(() => ns.peek('')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    await node.close();
    expect(() => ns.peek('k')).toThrow(expect.objectContaining({ code: 'closed' }));
  });

  it('values leave read-only: a caller cannot change what the replica holds; entries from get are fresh', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('reads');
    const input = { n: 1, nested: { list: [1, 2] } };
    const written = await ns.set('k', input);
    // The caller's own object is never frozen (the node keeps a normalized copy).
    expect(Object.isFrozen(input)).toBe(false);
    input.nested.list.push(3);
    const e = await ns.get('k');
    if (e === undefined) throw new Error('k is missing');
    expect(e.value).toEqual({ n: 1, nested: { list: [1, 2] } });
    expect(() => {
      (e.value as { nested: { list: number[] } }).nested.list.push(9);
    }).toThrow(TypeError);
    expect(() => {
      (written.value as { n: number }).n = 5;
    }).toThrow(TypeError);
    expect(ns.peek('k')?.value).toEqual({ n: 1, nested: { list: [1, 2] } });
    // get hands out a fresh entry each time (the caller may change its fields); peek a frozen shared one.
    const again = await ns.get('k');
    expect(again).not.toBe(e);
    (again as { key: string }).key = 'mine';
    expect((await ns.get('k'))?.key).toBe('k');
    const p = ns.peek('k');
    expect(ns.peek('k')).toBe(p);
    expect(Object.isFrozen(p)).toBe(true);
    // A new write is a new register: peek sees it at once.
    await ns.set('k', { n: 2 });
    expect(ns.peek('k')?.value).toEqual({ n: 2 });
    expect(ns.peek('k')).not.toBe(p);
    await node.close();
  });

  it('reads judge expiry by the clock of their turn: a read in a later turn sees the entry expired', async () => {
    const c = memoryCluster();
    const node = await c.start('a');
    const ns = node.eventual('reads');
    await ns.set('short', 1, { ttl: 1 });
    expect(ns.peek('short')?.value).toBe(1);
    await c.time.advance(1_000);
    expect(ns.peek('short')).toBeUndefined();
    expect(await ns.get('short')).toBeUndefined();
    expect((await ns.list()).items).toEqual([]);
    await node.close();
  });
});
