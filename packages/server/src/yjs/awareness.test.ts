import { describe, expect, it } from 'vitest';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { AwarenessTable } from './awareness.js';
import { decodeAwarenessUpdate, encodeAwarenessUpdate } from './protocol.js';

const limits = { maxStates: 3, maxStateBytes: 64, timeoutMs: 1_000 };
const e = (clientID: number, clock: number, state: unknown) => ({ clientID, clock, state: JSON.stringify(state) });

describe('AwarenessTable', () => {
  it('takes newer clocks, and a removal at the same clock; a client never seen counts as clock 0', () => {
    const t = new AwarenessTable<string>(limits);
    expect(t.apply([e(1, 0, { a: 1 })], 'c', 0)).toEqual([]); // like y-protocols: 0 is not above 0
    expect(t.apply([e(1, 1, { a: 1 })], 'c', 0)).toHaveLength(1);
    expect(t.apply([e(1, 1, { a: 2 })], 'c', 0)).toEqual([]);
    expect(t.apply([e(1, 2, { a: 2 })], 'c', 0)).toHaveLength(1);
    expect(t.apply([e(1, 2, null)], 'c', 0)).toHaveLength(1);
    expect(t.size).toBe(0);
    expect(t.apply([e(1, 2, null)], 'c', 0)).toEqual([]); // already gone
    // The tombstone keeps clock 2: an old copy cannot bring the client back.
    expect(t.apply([e(1, 2, { a: 2 })], 'c', 10)).toEqual([]);
    expect(t.apply([e(1, 3, { a: 3 })], 'c', 10)).toHaveLength(1);
  });

  it('expires clients not renewed within the timeout, keeping their clock', () => {
    const t = new AwarenessTable<string>(limits);
    t.apply([e(1, 1, { a: 1 }), e(2, 1, { b: 1 })], 'c', 0);
    t.apply([e(2, 2, { b: 2 })], 'c', 600);
    expect(t.expire(999)).toEqual([]);
    expect(t.expire(1_000)).toEqual([e(1, 1, null)]);
    expect(t.states()).toEqual([e(2, 2, { b: 2 })]);
    expect(t.expire(1_600)).toEqual([e(2, 2, null)]);
    expect(t.apply([e(1, 1, { a: 1 })], 'c', 1_700)).toEqual([]); // tombstone still there
    t.expire(2_000); // tombstones older than the timeout are forgotten
    expect(t.apply([e(1, 1, { a: 1 })], 'c', 2_700)).toHaveLength(1);
  });

  it("removes an owner's clients; the owner is whoever sent the latest state", () => {
    const t = new AwarenessTable<string>(limits);
    t.apply([e(1, 1, {}), e(2, 1, {})], 'conn-a', 0);
    t.apply([e(2, 2, {})], 'peer-b', 0);
    expect(t.removeOwned('conn-a', 5)).toEqual([e(1, 1, null)]);
    expect(t.ownedBy((o) => o === 'peer-b')).toEqual([e(2, 2, {})]);
    expect(t.removeOwned('conn-a', 5)).toEqual([]);
  });

  it('drops a new client beyond maxStates and a state beyond maxStateBytes, and bounds tombstones', () => {
    const t = new AwarenessTable<string>(limits);
    expect(t.apply([e(1, 1, {}), e(2, 1, {}), e(3, 1, {}), e(4, 1, {})], 'c', 0)).toHaveLength(3);
    expect(t.apply([e(1, 2, { pad: 'x'.repeat(64) })], 'c', 0)).toEqual([]);
    expect(t.dropped).toBe(2);
    expect(t.apply([e(1, 2, null)], 'c', 0)).toHaveLength(1);
    expect(t.apply([e(4, 1, {})], 'c', 0)).toHaveLength(1); // a slot was freed
    for (let id = 10; id < 20; id++) t.apply([e(id, 1, null)], 'c', id);
    expect(t.apply([e(10, 1, {})], 'c', 30)).toEqual([]); // still full of present clients
    expect(t.size).toBe(3);
  });

  it('reads and writes what y-protocols writes and reads', () => {
    const a = new awarenessProtocol.Awareness(new Y.Doc());
    a.setLocalState({ user: { name: 'ünï', n: 1 } });
    const bytes = awarenessProtocol.encodeAwarenessUpdate(a, [a.clientID]);
    const entries = decodeAwarenessUpdate(bytes);
    expect(entries).toEqual([{ clientID: a.clientID, clock: 1, state: '{"user":{"name":"ünï","n":1}}' }]);
    const b = new awarenessProtocol.Awareness(new Y.Doc());
    awarenessProtocol.applyAwarenessUpdate(b, encodeAwarenessUpdate(entries), 'test');
    expect(b.getStates().get(a.clientID)).toEqual({ user: { name: 'ünï', n: 1 } });
    a.destroy();
    b.destroy();
  });
});
