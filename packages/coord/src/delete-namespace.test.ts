/**
 * Bounded namespace deletes: `maxKeys` deletes the smallest matching keys
 * (key order) after `after`, says where to resume, and reports the live keys
 * it removed in key order — the same on a replica restored from a snapshot,
 * whose map holds the keys in another order.
 */
import { describe, expect, it } from 'vitest';
import { CoordHarness } from './harness.js';
import { CoordStateMachine } from './state-machine.js';
import type { Command, Operation, OpResult } from './types.js';

const NS = 'big';

/** Keys in an order that is neither sorted nor reversed; '/' and a surrogate pair sort as JavaScript strings do. */
const KEYS = ['m', 'a/2', 'z', 'a/10', '\u{1F600}', 'b', '\uE000', 'a/1', 'c.x', 'A', 'q', 'a'];

function filled(viaCodec = false): CoordHarness {
  const h = new CoordHarness({ versionKey: 'k' }, 1_700_000_000_000, viaCodec);
  for (const key of KEYS)
    h.ok({ type: 'set', namespace: NS, key, value: { key }, ...(key === 'q' ? { ttlSeconds: 1 } : {}) });
  h.advance(2_000); // 'q' has expired: it is removed, not counted, not reported
  return h;
}

const chunk = (after?: string): Operation => ({
  type: 'delete_namespace',
  namespace: NS,
  confirm: true,
  maxKeys: 4,
  ...(after === undefined ? {} : { after }),
});

describe('deleteNamespace with maxKeys', () => {
  for (const viaCodec of [false, true]) {
    it(`deletes in key order, a bounded chunk per command, until nothing matches${viaCodec ? ' (through the codec)' : ''}`, () => {
      const h = filled(viaCodec);
      const sorted = [...KEYS].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const removed: string[][] = [];
      let after: string | undefined;
      let total = 0;
      for (let i = 0; i < 10; i++) {
        const out = h.applyCommand({ nowMs: h.nowMs, op: chunk(after) });
        if (!out.result.ok) throw new Error(out.result.error.message);
        const r = out.result.value as Extract<OpResult, { type: 'namespace_deleted' }>;
        removed.push(out.removedKeys ?? []);
        expect((out.removedKeys ?? []).length).toBeLessThanOrEqual(4);
        total += r.deleted_count;
        expect(r.deleted_count).toBe((out.removedKeys ?? []).length);
        if (r.resume_after === undefined) break;
        after = r.resume_after;
      }
      expect(removed.flat()).toEqual(sorted.filter((k) => k !== 'q'));
      expect(removed.map((r) => r.length)).toEqual([4, 4, 3]); // 'q' was in the third chunk: removed, not live
      expect(total).toBe(KEYS.length - 1);
      expect(h.ok({ type: 'list', namespace: NS })).toMatchObject({ items: [] });
    });
  }

  it('honours the pattern and `after`, and without maxKeys deletes every match at once', () => {
    const h = filled();
    const out = h.applyCommand({
      nowMs: h.nowMs,
      op: { type: 'delete_namespace', namespace: NS, confirm: true, pattern: 'a/*', after: 'a/1', maxKeys: 1 },
    });
    expect(out.result).toMatchObject({ ok: true, value: { deleted_count: 1, resume_after: 'a/10' } });
    expect(out.removedKeys).toEqual(['a/10']);
    const all = h.applyCommand({ nowMs: h.nowMs, op: { type: 'delete_namespace', namespace: NS, confirm: true } });
    expect(all.result).toEqual({
      ok: true,
      value: { type: 'namespace_deleted', deleted_count: KEYS.length - 2, namespace: NS, pattern_used: '*' },
    });
    expect(all.removedKeys).toHaveLength(KEYS.length - 2);
  });

  it('picks and reports the same keys on a replica restored from a snapshot (another map order)', () => {
    const h = filled();
    const restored = new CoordStateMachine({ versionKey: 'k', limits: h.sm.limits });
    restored.restore(h.sm.snapshot());
    const command: Command = { nowMs: h.nowMs, op: chunk('a') };
    const position = { index: h.index + 1, term: 1 };
    const a = h.sm.apply(command, position);
    const b = restored.apply(command, position);
    expect(b).toEqual(a);
    expect(a.removedKeys).toEqual(['a/1', 'a/10', 'a/2', 'b']);
    expect(restored.snapshot()).toEqual(h.sm.snapshot());
  });

  it('refuses a bad bound or cursor and deletes nothing', () => {
    const h = filled();
    for (const op of [
      { ...chunk(), maxKeys: 0 },
      { ...chunk(), maxKeys: 10_001 },
      { ...chunk(), maxKeys: 1.5 },
      { ...chunk(), after: '' },
    ]) {
      expect(h.code(op as Operation), JSON.stringify(op)).toBe('invalid_argument');
    }
    expect((h.ok({ type: 'list', namespace: NS }) as Extract<OpResult, { type: 'list' }>).items).toHaveLength(
      KEYS.length - 1,
    );
  });
});
