import { ClockDriftError, InvalidArgumentError, NamespaceFullError, ValueTooLargeError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import {
  decodeDelta,
  decodeDigest,
  decodeState,
  encodeDelta,
  encodeDigest,
  encodeState,
  MAX_TTL_SECONDS,
  NamespaceReplica,
  type NamespaceReplicaOptions,
} from './index.js';

const T0 = 1_750_000_000_000;

function replica(id: string, options: Partial<NamespaceReplicaOptions> = {}): NamespaceReplica {
  return new NamespaceReplica({ namespace: 'ns', replicaId: id, ...options });
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

describe('entries and TTL', () => {
  it('reads back the envelope with the default TTL of 3600 s', () => {
    const a = replica('a');
    a.set('k', { pct: 25 }, T0);
    expect(a.get('k', T0)).toMatchObject({
      value: { pct: 25 },
      ttlSeconds: 3600,
      createdAt: T0,
      updatedAt: T0,
      expiresAt: T0 + 3_600_000,
    });
  });

  it('an entry reads as absent at exactly expiresAt, before any GC', () => {
    const a = replica('a');
    a.set('k', 1, T0, { ttlSeconds: 10 });
    expect(a.get('k', T0 + 9_999)?.value).toBe(1);
    expect(a.get('k', T0 + 10_000)).toBeUndefined();
    expect(a.keys(T0 + 10_000)).toEqual([]);
    expect(a.stats().states).toBe(1); // still held, just not visible
  });

  it('every replica agrees on expiry: it is replicated state, not local', () => {
    const a = replica('a');
    const b = replica('b');
    b.merge(a.set('k', 'v', T0, { ttlSeconds: 5 }), T0 + 3000); // b receives it late
    expect(b.get('k', T0 + 4999)?.expiresAt).toBe(T0 + 5000);
    expect(b.get('k', T0 + 5000)).toBeUndefined();
  });

  it('renewal after expiry wins by LWW on every replica, whatever the delivery order', () => {
    const a = replica('a');
    const b = replica('b');
    const first = a.set('k', 'old', T0, { ttlSeconds: 1 });
    const renewal = a.set('k', 'new', T0 + 5000, { ttlSeconds: 60 });
    b.merge(renewal, T0 + 5001);
    b.merge(first, T0 + 5002); // the older write arrives late and loses
    for (const r of [a, b]) {
      expect(r.get('k', T0 + 6000)?.value).toBe('new');
      expect(r.get('k', T0 + 6000)?.createdAt).toBe(T0 + 5000); // a new life after expiry
    }
    expect(hex(encodeState(a.state()))).toBe(hex(encodeState(b.state())));
  });

  it('an entry serializes to the plain envelope', () => {
    const a = replica('a');
    a.set('k', [1, 'x'], T0, { ttlSeconds: 5 });
    a.increment('n', 2, T0);
    const e = a.get('k', T0);
    const plain = {
      value: [1, 'x'],
      version: e?.version,
      ttlSeconds: 5,
      createdAt: T0,
      updatedAt: T0,
      expiresAt: T0 + 5000,
    };
    expect(JSON.parse(JSON.stringify(e))).toEqual(plain);
    expect(typeof e?.version).toBe('string');
    expect(JSON.parse(JSON.stringify(a.get('n', T0)))).toMatchObject({ value: 2, ttlSeconds: 3600, createdAt: T0 });
  });

  it('an overwrite of a live key keeps createdAt and gets a fresh version', () => {
    const a = replica('a');
    a.set('k', 1, T0);
    const v1 = a.get('k', T0)?.version;
    a.set('k', 2, T0 + 10);
    const e = a.get('k', T0 + 10);
    expect(e?.createdAt).toBe(T0);
    expect(e?.updatedAt).toBe(T0 + 10);
    expect(e?.version).not.toBe(v1);
  });

  it('refuses a TTL outside 1 s .. 30 days with invalid_argument and changes nothing', () => {
    const a = replica('a');
    for (const ttlSeconds of [0, -1, 0.5, MAX_TTL_SECONDS + 1, Number.NaN]) {
      expect(() => a.set('k', 1, T0, { ttlSeconds })).toThrow(InvalidArgumentError);
      expect(() => a.increment('c', 1, T0, { ttlSeconds })).toThrow(InvalidArgumentError);
    }
    a.set('k', 1, T0, { ttlSeconds: 1 });
    a.set('k', 1, T0, { ttlSeconds: MAX_TTL_SECONDS });
    expect(a.stats().states).toBe(1);
    expect(a.digest().context.get('a')).toEqual([1, 2]);
  });
});

describe('limits', () => {
  it('a value over maxValueBytes is value_too_large and changes nothing', () => {
    const a = replica('a', { maxValueBytes: 10 });
    a.set('k', 'ok', T0);
    expect(() => a.set('k', 'x'.repeat(9), T0)).toThrow(ValueTooLargeError); // 11 bytes with quotes
    expect(() => a.set('k', 'é'.repeat(5), T0)).toThrow(ValueTooLargeError); // 12 UTF-8 bytes
    a.set('k', 'x'.repeat(8), T0); // exactly 10
    expect(a.get('k', T0)?.value).toBe('xxxxxxxx');
    expect(a.digest().context.get('a')).toEqual([1, 2]);
  });

  it('the default limit is 1 MB of encoded value', () => {
    const a = replica('a');
    expect(() => a.set('k', 'x'.repeat(1_048_577), T0)).toThrow(ValueTooLargeError);
    a.set('k', 'x'.repeat(1_048_574), T0);
  });

  it('a new live key over maxLiveKeys is namespace_full; overwrites, deletes and expired slots still work', () => {
    const a = replica('a', { maxLiveKeys: 2 });
    a.set('k1', 1, T0);
    a.set('k2', 1, T0, { ttlSeconds: 1 });
    expect(() => a.set('k3', 1, T0)).toThrow(NamespaceFullError);
    expect(() => a.increment('k3', 1, T0)).toThrow(NamespaceFullError);
    expect(a.get('k3', T0)).toBeUndefined();
    a.set('k1', 2, T0); // overwrite of a live key
    a.set('k3', 1, T0 + 1000); // k2 expired: room again
    a.delete('k1', T0 + 1000);
    a.increment('k4', 1, T0 + 1000);
    expect(a.keys(T0 + 1000)).toEqual(['k3', 'k4']);
  });

  it('rejects values JSON cannot carry and bad keys', () => {
    const a = replica('a');
    expect(() => a.set('k', Number.NaN, T0)).toThrow(InvalidArgumentError);
    expect(() => a.set('k', undefined as never, T0)).toThrow(InvalidArgumentError);
    expect(() => a.set('', 1, T0)).toThrow(InvalidArgumentError);
    expect(() => a.set('\ud800', 1, T0)).toThrow(InvalidArgumentError);
    expect(() => a.increment('c', 0.5, T0)).toThrow(InvalidArgumentError);
    expect(a.stats().states).toBe(0);
  });

  it('stores a private normalized copy of the value', () => {
    const a = replica('a');
    const v = { list: [1, -0], when: undefined };
    a.set('k', v as never, T0);
    v.list.push(2);
    expect(a.get('k', T0)?.value).toEqual({ list: [1, 0] });
  });
});

describe('LWW and counters across replicas', () => {
  it('LWW tie-break: same physical ms and logical counter, the greater node id wins everywhere', () => {
    const a = replica('a');
    const b = replica('b');
    const da = a.set('k', 'from-a', T0);
    const db = b.set('k', 'from-b', T0);
    a.merge(db, T0);
    b.merge(da, T0);
    expect(a.get('k', T0)?.value).toBe('from-b');
    expect(b.get('k', T0)?.value).toBe('from-b');
  });

  it('a write after seeing a remote write wins even if the local clock is behind', () => {
    const a = replica('a');
    const b = replica('b');
    a.merge(b.set('k', 'b', T0 + 30_000), T0); // b's clock is 30 s ahead
    a.set('k', 'a-later', T0 + 1);
    b.merge(a.state(), T0 + 30_001);
    expect(b.get('k', T0 + 30_001)?.value).toBe('a-later');
  });

  it('concurrent counter updates on different replicas all count, also on a fresh key', () => {
    const a = replica('a');
    const b = replica('b');
    const c = replica('c');
    const deltas = [
      a.increment('n', 5, T0),
      b.increment('n', -2, T0),
      c.increment('n', 10, T0 + 1),
      a.increment('n', 1, T0 + 2),
    ];
    for (const r of [a, b, c]) for (const d of deltas) r.merge(decodeDelta(encodeDelta(d)), T0 + 3);
    for (const r of [a, b, c]) expect(r.get('n', T0 + 3)?.value).toBe(14);
    expect(hex(encodeState(a.state()))).toBe(hex(encodeState(c.state())));
  });

  it('a counter may go negative; an increment renews its TTL', () => {
    const a = replica('a');
    a.increment('n', -3, T0, { ttlSeconds: 10 });
    a.increment('n', 1, T0 + 9_000, { ttlSeconds: 10 });
    const e = a.get('n', T0 + 15_000);
    expect(e?.value).toBe(-2);
    expect(e?.expiresAt).toBe(T0 + 19_000);
  });

  it('an increment after expiry or delete starts from zero', () => {
    const a = replica('a');
    a.increment('n', 7, T0, { ttlSeconds: 1 });
    a.increment('n', 2, T0 + 1000);
    expect(a.get('n', T0 + 1000)?.value).toBe(2);
    a.delete('n', T0 + 2000);
    a.increment('n', 3, T0 + 3000);
    expect(a.get('n', T0 + 3000)?.value).toBe(3);
  });

  it('incrementing a live register is invalid_argument; a set replaces a counter', () => {
    const a = replica('a');
    a.set('k', 'text', T0);
    expect(() => a.increment('k', 1, T0)).toThrow(InvalidArgumentError);
    a.increment('n', 1, T0);
    a.set('n', 'now a register', T0 + 1);
    expect(a.get('n', T0 + 1)?.value).toBe('now a register');
  });

  it('a delete concurrent with an older write wins; a write after the delete wins over it', () => {
    const a = replica('a');
    const b = replica('b');
    const w = b.set('k', 'old', T0);
    const del = a.delete('k', T0 + 10);
    a.merge(w, T0 + 11);
    expect(a.get('k', T0 + 11)).toBeUndefined();
    b.merge(del, T0 + 11);
    b.set('k', 'again', T0 + 12);
    a.merge(b.deltaFor(a.digest()), T0 + 13);
    expect(a.get('k', T0 + 13)?.value).toBe('again');
  });

  it('merge refuses states stamped beyond the drift bound, counts them and applies the rest', () => {
    const a = replica('a');
    const b = replica('b', { maxClockDriftMs: 60_000 });
    const ok = a.set('ok', 1, T0);
    const ahead = a.set('far', 2, T0 + 120_000); // a's clock runs 2 min ahead
    b.merge(ok, T0);
    const result = b.merge(ahead, T0);
    expect(result).toEqual({ changedKeys: [], rejectedStates: 1 });
    expect(b.get('far', T0)).toBeUndefined();
    expect(b.stats().driftRejections).toBe(1);
    expect(b.clock.rejectedCount).toBe(1);
    expect(b.clock.peek().wallMs).toBeLessThan(T0 + 120_000); // never adopted
    expect(() => b.clock.receive({ wallMs: T0 + 120_000, logical: 0, node: 'a' }, T0)).toThrow(ClockDriftError);
    // Once real time catches up, anti-entropy brings it in.
    b.merge(a.deltaFor(b.digest()), T0 + 61_000);
    expect(b.get('far', T0 + 61_000)?.value).toBe(2);
  });

  it('refuses a delta of another namespace', () => {
    const a = replica('a');
    const other = new NamespaceReplica({ namespace: 'other', replicaId: 'b' });
    expect(() => a.merge(other.set('k', 1, T0), T0)).toThrow(InvalidArgumentError);
  });
});

describe('anti-entropy', () => {
  it('a replica offline with 10 of 100,000 keys changed receives about 10 entries', () => {
    const a = replica('a', { maxLiveKeys: 200_000 });
    for (let i = 0; i < 100_000; i++) a.set(`key-${i}`, i, T0);
    const b = replica('b', { maxLiveKeys: 200_000 });
    b.merge(a.state(), T0);
    // b goes offline; a changes 10 keys and loses every gossip message.
    for (let i = 0; i < 10; i++) a.set(`key-${i * 9_999}`, 'changed', T0 + 86_400_000);
    const digest = encodeDigest(b.digest());
    const reply = a.deltaFor(decodeDigest(digest));
    expect(reply.states).toHaveLength(10);
    const replyBytes = encodeDelta(reply);
    expect(digest.length).toBeLessThan(20);
    expect(replyBytes.length).toBeLessThan(10 * 40);
    b.merge(decodeDelta(replyBytes), T0 + 86_400_000);
    expect(b.get('key-9999', T0 + 86_400_000)?.value).toBe('changed');
    expect(a.deltaFor(b.digest()).states).toHaveLength(0);
  });

  it('a digest with gaps (dropped or reordered gossip) asks exactly for the gaps', () => {
    const a = replica('a');
    const b = replica('b');
    const deltas = Array.from({ length: 6 }, (_, i) => a.set(`k${i}`, i, T0 + i));
    for (const i of [0, 1, 3, 5]) b.merge(deltas[i] as never, T0 + 10); // 2 and 4 lost
    expect(b.digest().context.get('a')).toEqual([1, 2, 4, 4, 6, 6]);
    const reply = a.deltaFor(b.digest());
    expect(reply.states.map((s) => s.key)).toEqual(['k2', 'k4']);
    b.merge(reply, T0 + 10);
    expect(b.digest().context.get('a')).toEqual([1, 6]);
  });

  it('superseded writes fill gaps through the context, without resending anything', () => {
    const a = replica('a');
    const b = replica('b');
    a.set('k', 1, T0); // dot a:1, lost
    a.set('k', 2, T0 + 1); // dot a:2 supersedes it
    b.merge(a.set('other', 3, T0 + 2), T0 + 3); // dot a:3
    const reply = a.deltaFor(b.digest());
    expect(reply.states.map((s) => s.key)).toEqual(['k']);
    b.merge(reply, T0 + 3);
    expect(b.digest().context.get('a')).toEqual([1, 3]);
    // A late copy of the superseded write changes nothing.
    expect(
      b.merge(
        {
          namespace: 'ns',
          states: [
            {
              type: 'register',
              key: 'k',
              wallMs: T0,
              logical: 0,
              node: 'a',
              seq: 1,
              ttlSeconds: 3600,
              createdAt: T0,
              value: 1,
            },
          ],
          context: new Map(),
        },
        T0 + 4,
      ).changedKeys,
    ).toEqual([]);
  });
});

describe('persistence', () => {
  it('a replica reloaded from its encoded state resumes its clock and write counter', () => {
    const a = replica('a');
    const peer = replica('p');
    for (let i = 0; i < 3; i++) peer.merge(a.set(`k${i}`, i, T0 + i), T0 + i);
    a.increment('n', 2, T0 + 3);
    const reloaded = replica('a');
    reloaded.merge(decodeState(encodeState(a.state())), T0); // physical clock now behind
    expect(reloaded.entries(T0 + 4)).toEqual(a.entries(T0 + 4));
    const next = reloaded.set('k0', 'after reload', T0);
    expect(next.states[0]).toMatchObject({ seq: 5 }); // not a reused dot
    expect(peer.merge(next, T0 + 5).changedKeys).toEqual(['k0']);
    expect(peer.get('k0', T0 + 5)?.value).toBe('after reload');
  });
});

describe('anti-entropy at scale', () => {
  it('stays exact through index rebuilds and out-of-order arrivals', () => {
    const a = replica('a');
    const deltas = [];
    for (let i = 0; i < 3000; i++) {
      const key = `k${i % 50}`;
      deltas.push(
        i % 7 === 0 ? a.delete(key, T0 + i) : i % 5 === 0 ? a.increment(`n${i % 3}`, i, T0 + i) : a.set(key, i, T0 + i),
      );
    }
    const b = replica('b');
    for (let i = deltas.length - 1; i >= 0; i -= 2) b.merge(deltas[i] as never, T0 + 3000); // reversed, half lost
    const c = replica('c');
    c.merge(b.deltaFor(c.digest()), T0 + 3000);
    c.merge(a.deltaFor(c.digest()), T0 + 3000);
    b.merge(c.deltaFor(b.digest()), T0 + 3000);
    for (const r of [b, c]) {
      expect(r.entries(T0 + 3000)).toEqual(a.entries(T0 + 3000));
      expect(hex(encodeState(r.state()))).toBe(hex(encodeState(a.state())));
    }
    expect(a.deltaFor(c.digest()).states).toHaveLength(0);
  });
});

describe('garbage collection', () => {
  const graceMs = MAX_TTL_SECONDS * 1000;

  it('keeps a tombstone until the grace period (the maximum TTL) has passed', () => {
    const a = replica('a');
    a.set('k', 'v', T0, { ttlSeconds: MAX_TTL_SECONDS });
    a.delete('k', T0 + 1000);
    expect(a.gc(T0 + 1000 + graceMs - 1)).toEqual({ removed: 0 });
    expect(a.stats().tombstones).toBe(1);
    expect(a.gc(T0 + 1000 + graceMs)).toEqual({ removed: 1 });
    expect(a.stats()).toMatchObject({ states: 0, tombstones: 0 });
  });

  it('a tombstone GC must not drop yet: a concurrent older write arriving late stays deleted', () => {
    const a = replica('a');
    const b = replica('b');
    const w = b.set('k', 'zombie', T0, { ttlSeconds: MAX_TTL_SECONDS }); // concurrent with the delete, lost
    a.delete('k', T0 + 1000);
    // Before the grace period, GC keeps the tombstone and the late write stays dead.
    a.gc(T0 + 10 * 86_400_000);
    a.merge(w, T0 + 10 * 86_400_000);
    expect(a.get('k', T0 + 10 * 86_400_000)).toBeUndefined();
  });

  it('after collection, nothing comes back: seen writes are ignored, unseen older ones have expired', () => {
    const a = replica('a');
    const b = replica('b');
    const seen = b.set('k', 'seen', T0, { ttlSeconds: MAX_TTL_SECONDS });
    const unseen = replica('c').set('k', 'unseen', T0 + 1, { ttlSeconds: MAX_TTL_SECONDS });
    a.merge(seen, T0);
    a.delete('k', T0 + 1000);
    const later = T0 + 1000 + graceMs;
    expect(a.gc(later).removed).toBe(1);
    expect(a.merge(seen, later).changedKeys).toEqual([]); // its dot is still in the context
    a.merge(unseen, later); // never seen here, but older than the delete: already expired
    expect(a.get('k', later)).toBeUndefined();
    // b, away for the whole grace period, syncs: the key stays deleted everywhere.
    b.merge(a.deltaFor(b.digest()), later);
    a.merge(b.deltaFor(a.digest()), later);
    expect(a.get('k', later)).toBeUndefined();
    expect(b.get('k', later)).toBeUndefined();
  });

  it('collects expired entries after the grace period, and keeps live ones', () => {
    const a = replica('a');
    a.set('short', 1, T0, { ttlSeconds: 1 });
    a.set('long', 1, T0 + 10, { ttlSeconds: MAX_TTL_SECONDS });
    expect(a.gc(T0 + graceMs - 1).removed).toBe(0);
    expect(a.gc(T0 + graceMs).removed).toBe(1);
    expect(a.keys(T0 + graceMs)).toEqual(['long']);
    expect(a.stateOf('short')).toBeUndefined();
  });

  it('with acknowledgements from every peer, collects early what all have seen', () => {
    const a = replica('a');
    const b = replica('b');
    b.merge(a.set('k', 1, T0), T0);
    b.merge(a.delete('k', T0 + 1), T0 + 1);
    const unacked = a.delete('x', T0 + 2);
    // b has not seen the delete of x: only k's tombstone goes.
    expect(a.gc(T0 + 3, { peers: [b.digest()] }).removed).toBe(1);
    expect(a.stateOf('x')?.type).toBe('tombstone');
    b.merge(unacked, T0 + 3);
    // a peer that has seen something a lacks blocks early collection
    b.set('y', 1, T0 + 4);
    expect(a.gc(T0 + 5, { peers: [b.digest()] }).removed).toBe(0);
  });
});
