import { describe, expect, it } from 'vitest';
import { CoordHarness } from './harness.js';
import type { Entry, OpResult } from './types.js';

const NS = 'jobs';

function entryOf(r: OpResult): Entry {
  if (r.type !== 'entry' && r.type !== 'got') throw new Error(`not an entry: ${r.type}`);
  return r.entry;
}

describe('set / get', () => {
  it('creates, then updates, with a fresh opaque version each time', () => {
    const h = new CoordHarness({ versionKey: 'k' });
    const a = h.ok({ type: 'set', namespace: NS, key: 'cfg', value: { pct: 25 } });
    expect(a.type === 'entry' && a.operation).toBe('created');
    h.advance(1000);
    const b = h.ok({ type: 'set', namespace: NS, key: 'cfg', value: { pct: 50 } });
    expect(b.type === 'entry' && b.operation).toBe('updated');
    const ea = entryOf(a);
    const eb = entryOf(b);
    expect(ea.version).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(eb.version).not.toBe(ea.version);
    expect(eb.createdAt).toBe(ea.createdAt);
    expect(eb.updatedAt).toBe(ea.updatedAt + 1000);
    expect(eb.ttlSeconds).toBe(3600);
    expect(eb.expiresAt).toBe(eb.updatedAt + 3600_000);
    const got = entryOf(h.ok({ type: 'get', namespace: NS, key: 'cfg' }));
    expect(got).toEqual(eb);
    expect(got.kind).toBe('value');
  });

  it('gives every write a distinct version, also across keys and rewrites of the same value', () => {
    const h = new CoordHarness();
    const versions = new Set<string>();
    for (let i = 0; i < 500; i++) {
      versions.add(entryOf(h.ok({ type: 'set', namespace: NS, key: `k${i % 7}`, value: 1 })).version);
    }
    expect(versions.size).toBe(500);
  });

  it('get of a missing key is key_not_found', () => {
    const h = new CoordHarness();
    expect(h.code({ type: 'get', namespace: NS, key: 'nope' })).toBe('key_not_found');
  });

  it('ifNotExists makes the write create-only', () => {
    const h = new CoordHarness();
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, ifNotExists: true });
    const before = h.sm.snapshot();
    const r = h.run({ type: 'set', namespace: NS, key: 'k', value: 2, ifNotExists: true });
    expect(!r.ok && r.error.code).toBe('key_already_exists');
    expect(entryOf(h.ok({ type: 'get', namespace: NS, key: 'k' })).value).toBe(1);
    // Only the applied index and time moved.
    expect(stripHeader(h.sm.snapshot())).toEqual(stripHeader(before));
  });

  it('ifVersion is compare-and-swap; the mismatch names expected and actual', () => {
    const h = new CoordHarness();
    const v1 = entryOf(h.ok({ type: 'set', namespace: NS, key: 'k', value: 1 })).version;
    const v2 = entryOf(h.ok({ type: 'set', namespace: NS, key: 'k', value: 2, ifVersion: v1 })).version;
    const r = h.run({ type: 'set', namespace: NS, key: 'k', value: 3, ifVersion: v1 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('version_mismatch');
    expect(r.error.message).toContain(v1);
    expect(r.error.message).toContain(v2);
    expect(r.error.details).toMatchObject({ expected: v1, actual: v2 });
    expect(entryOf(h.ok({ type: 'get', namespace: NS, key: 'k' })).value).toBe(2);
    const absent = h.run({ type: 'set', namespace: NS, key: 'other', value: 1, ifVersion: v1 });
    expect(!absent.ok && absent.error.message).toContain('actual none');
  });

  it('rejects ifNotExists together with ifVersion', () => {
    const h = new CoordHarness();
    expect(h.code({ type: 'set', namespace: NS, key: 'k', value: 1, ifNotExists: true, ifVersion: 'x' })).toBe(
      'invalid_argument',
    );
  });

  it('bounds TTL to 1 s .. 30 days, integer seconds', () => {
    const h = new CoordHarness();
    for (const ttlSeconds of [0, -1, 1.5, 30 * 86_400 + 1]) {
      expect(h.code({ type: 'set', namespace: NS, key: 'k', value: 1, ttlSeconds })).toBe('invalid_argument');
    }
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, ttlSeconds: 30 * 86_400 });
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, ttlSeconds: 1 });
  });

  it('reads an expired entry as absent at once, before any expire command', () => {
    const h = new CoordHarness();
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, ttlSeconds: 2 });
    h.advance(1999);
    expect(entryOf(h.ok({ type: 'get', namespace: NS, key: 'k' })).value).toBe(1);
    h.advance(1);
    expect(h.code({ type: 'get', namespace: NS, key: 'k' })).toBe('key_not_found');
    expect(h.sm.query({ type: 'get', namespace: NS, key: 'k' }).ok).toBe(false);
    const again = h.ok({ type: 'set', namespace: NS, key: 'k', value: 2, ifNotExists: true });
    expect(again.type === 'entry' && again.operation).toBe('created');
  });

  it('rejects values over 1 MiB with value_too_large and writes nothing', () => {
    const h = new CoordHarness();
    const big = 'x'.repeat(1_048_576); // plus two quote characters
    const r = h.run({ type: 'set', namespace: NS, key: 'k', value: big });
    expect(!r.ok && r.error.code).toBe('value_too_large');
    expect(!r.ok && r.error.details).toMatchObject({ sizeBytes: 1_048_578, limitBytes: 1_048_576 });
    expect(h.code({ type: 'get', namespace: NS, key: 'k' })).toBe('key_not_found');
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 'x'.repeat(1_048_574) });
  });

  it('rejects non-JSON values and bad identifiers', () => {
    const h = new CoordHarness();
    expect(h.code({ type: 'set', namespace: NS, key: 'k', value: Number.NaN })).toBe('invalid_argument');
    expect(h.code({ type: 'set', namespace: NS, key: 'k', value: undefined as never })).toBe('invalid_argument');
    expect(h.code({ type: 'set', namespace: 'bad ns', key: 'k', value: 1 })).toBe('invalid_argument');
    expect(h.code({ type: 'set', namespace: NS, key: '', value: 1 })).toBe('invalid_argument');
    expect(h.code({ type: 'set', namespace: NS, key: 'a\nb', value: 1 })).toBe('invalid_argument');
    expect(h.code({ type: 'bogus' } as never)).toBe('invalid_argument');
  });

  it('caps live keys per namespace, counting only live ones', () => {
    const h = new CoordHarness({ limits: { maxKeysPerNamespace: 3 } });
    h.ok({ type: 'set', namespace: NS, key: 'a', value: 1, ttlSeconds: 1 });
    h.ok({ type: 'set', namespace: NS, key: 'b', value: 1 });
    h.ok({ type: 'set', namespace: NS, key: 'c', value: 1 });
    const r = h.run({ type: 'set', namespace: NS, key: 'd', value: 1 });
    expect(!r.ok && r.error.code).toBe('namespace_full');
    expect(h.code({ type: 'claim', namespace: NS, key: 'd', value: 1 })).toBe('namespace_full');
    h.ok({ type: 'set', namespace: NS, key: 'c', value: 2 }); // updates still fine
    h.ok({ type: 'set', namespace: 'other', key: 'd', value: 1 }); // other namespaces unaffected
    h.advance(1000);
    h.ok({ type: 'set', namespace: NS, key: 'd', value: 1 }); // 'a' expired and makes room
  });
});

describe('delete', () => {
  it('deletes, honours ifVersion and reports missing keys', () => {
    const h = new CoordHarness();
    const v = entryOf(h.ok({ type: 'set', namespace: NS, key: 'k', value: 1 })).version;
    expect(h.code({ type: 'delete', namespace: NS, key: 'k', ifVersion: 'nope' })).toBe('version_mismatch');
    expect(h.ok({ type: 'delete', namespace: NS, key: 'k', ifVersion: v })).toEqual({
      type: 'deleted',
      namespace: NS,
      key: 'k',
    });
    expect(h.code({ type: 'delete', namespace: NS, key: 'k' })).toBe('key_not_found');
    expect(h.code({ type: 'get', namespace: NS, key: 'k' })).toBe('key_not_found');
  });
});

describe('list', () => {
  function seeded(): CoordHarness {
    const h = new CoordHarness();
    const rows: [string, unknown][] = [
      ['replica-count', { n: 3, env: 'prod' }],
      ['replica-min', { n: 1, env: 'dev' }],
      ['rollout', { pct: 25, env: 'prod', owner: null }],
      ['Zeta', { n: 10 }],
      ['alpha', 'plain'],
    ];
    for (const [key, value] of rows) {
      h.ok({ type: 'set', namespace: NS, key, value: value as never });
      h.advance(10);
    }
    return h;
  }

  const keys = (r: OpResult) => (r.type === 'list' ? r.items.map((e) => e.key) : []);

  it('returns full entries sorted by key by default', () => {
    const h = seeded();
    const r = h.ok({ type: 'list', namespace: NS });
    expect(keys(r)).toEqual(['Zeta', 'alpha', 'replica-count', 'replica-min', 'rollout']);
    expect(r.type === 'list' && r.items[1]?.value).toBe('plain');
    expect(r.type === 'list' && r.nextCursor).toBe(null);
  });

  it('matches q as a case-insensitive substring of the key', () => {
    const h = seeded();
    expect(keys(h.ok({ type: 'list', namespace: NS, q: 'replica' }))).toEqual(['replica-count', 'replica-min']);
    expect(keys(h.ok({ type: 'list', namespace: NS, q: 'ZET' }))).toEqual(['Zeta']);
  });

  it('filters on value fields', () => {
    const h = seeded();
    expect(keys(h.ok({ type: 'list', namespace: NS, filter: 'env = "prod"' }))).toEqual(['replica-count', 'rollout']);
    expect(keys(h.ok({ type: 'list', namespace: NS, filter: 'n >= 3' }))).toEqual(['Zeta', 'replica-count']);
    expect(keys(h.ok({ type: 'list', namespace: NS, filter: 'owner exists' }))).toEqual(['rollout']);
    expect(keys(h.ok({ type: 'list', namespace: NS, filter: '$ = "plain"' }))).toEqual(['alpha']);
    expect(h.code({ type: 'list', namespace: NS, filter: 'n >> 3' })).toBe('invalid_argument');
  });

  it('sorts by created_at / updated_at in either order', () => {
    const h = seeded();
    h.ok({ type: 'set', namespace: NS, key: 'replica-count', value: { n: 4 } });
    expect(keys(h.ok({ type: 'list', namespace: NS, sortBy: 'created_at' }))).toEqual([
      'replica-count',
      'replica-min',
      'rollout',
      'Zeta',
      'alpha',
    ]);
    expect(keys(h.ok({ type: 'list', namespace: NS, sortBy: 'updated_at', sortOrder: 'desc' }))[0]).toBe(
      'replica-count',
    );
    expect(keys(h.ok({ type: 'list', namespace: NS, sortOrder: 'desc' }))[0]).toBe('rollout');
  });

  it('paginates with a stable cursor that survives concurrent inserts', () => {
    const h = new CoordHarness();
    for (let i = 0; i < 25; i++) h.ok({ type: 'set', namespace: NS, key: `k${String(i).padStart(2, '0')}`, value: i });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const r = h.ok({ type: 'list', namespace: NS, limit: 10, ...(cursor ? { cursor } : {}) });
      if (r.type !== 'list') throw new Error('not a list');
      seen.push(...r.items.map((e) => e.key));
      pages++;
      // A key inserted before the cursor position is not returned later; one after it is.
      if (pages === 1) {
        h.ok({ type: 'set', namespace: NS, key: 'k00a', value: 0 });
        h.ok({ type: 'set', namespace: NS, key: 'k99', value: 0 });
      }
      if (!r.nextCursor) break;
      cursor = r.nextCursor;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual([...Array.from({ length: 25 }, (_, i) => `k${String(i).padStart(2, '0')}`), 'k99']);
    expect(h.code({ type: 'list', namespace: NS, cursor: 'garbage!' })).toBe('invalid_argument');
    expect(h.code({ type: 'list', namespace: NS, cursor, sortBy: 'created_at' })).toBe('invalid_argument');
    expect(h.code({ type: 'list', namespace: NS, limit: 0 })).toBe('invalid_argument');
    expect(h.code({ type: 'list', namespace: NS, limit: 1001 })).toBe('invalid_argument');
  });

  it('ends a page early when the values would pass the page byte bound', () => {
    const h = new CoordHarness({ limits: { maxListPageBytes: 250 } });
    for (let i = 0; i < 5; i++) h.ok({ type: 'set', namespace: NS, key: `k${i}`, value: 'x'.repeat(98) });
    const first = h.ok({ type: 'list', namespace: NS });
    expect(keys(first)).toEqual(['k0', 'k1']);
    const cursor = first.type === 'list' ? first.nextCursor : null;
    expect(keys(h.ok({ type: 'list', namespace: NS, cursor: cursor ?? '' }))).toEqual(['k2', 'k3']);
    h.ok({ type: 'set', namespace: NS, key: 'big', value: 'y'.repeat(1000) });
    expect(keys(h.ok({ type: 'list', namespace: NS, q: 'big' }))).toEqual(['big']); // one item always fits
  });

  it('omits expired entries', () => {
    const h = new CoordHarness();
    h.ok({ type: 'set', namespace: NS, key: 'short', value: 1, ttlSeconds: 1 });
    h.ok({ type: 'set', namespace: NS, key: 'long', value: 1 });
    h.advance(1000);
    expect(keys(h.ok({ type: 'list', namespace: NS }))).toEqual(['long']);
  });
});

describe('deleteNamespace', () => {
  it('requires confirm and deletes the keys a glob matches', () => {
    const h = new CoordHarness();
    for (const key of ['a/1', 'a/2', 'b/1', 'short']) {
      h.ok({ type: 'set', namespace: NS, key, value: 1, ...(key === 'short' ? { ttlSeconds: 1 } : {}) });
    }
    expect(h.code({ type: 'delete_namespace', namespace: NS, confirm: false })).toBe('invalid_argument');
    expect(h.ok({ type: 'delete_namespace', namespace: NS, pattern: 'a/*', confirm: true })).toEqual({
      type: 'namespace_deleted',
      deleted_count: 2,
      namespace: NS,
      pattern_used: 'a/*',
    });
    h.advance(1000); // 'short' expired: removed but not counted
    expect(h.ok({ type: 'delete_namespace', namespace: NS, confirm: true })).toEqual({
      type: 'namespace_deleted',
      deleted_count: 1,
      namespace: NS,
      pattern_used: '*',
    });
    expect(h.code({ type: 'get', namespace: NS, key: 'b/1' })).toBe('key_not_found');
    expect(h.code({ type: 'delete_namespace', namespace: NS, confirm: true, pattern: '' })).toBe('invalid_argument');
  });
});

describe('time and versions', () => {
  it('never moves state-machine time backwards', () => {
    const h = new CoordHarness();
    h.ok({ type: 'noop' });
    const t = h.sm.timeMs;
    h.nowMs -= 60_000; // a new leader whose clock is behind
    h.ok({ type: 'noop' });
    expect(h.sm.timeMs).toBe(t);
    const e = entryOf(h.ok({ type: 'set', namespace: NS, key: 'k', value: 1 }));
    expect(e.createdAt).toBe(t);
  });

  it('keeps TTL remaining time across a leader change (no reset to the full TTL)', () => {
    const h = new CoordHarness();
    const start = h.nowMs;
    h.ok({ type: 'set', namespace: NS, key: 'k', value: 1, ttlSeconds: 10 });
    h.advance(6000);
    h.term = 2; // leader change: the new leader's first entries
    h.ok({ type: 'noop' });
    h.advance(3999);
    expect(h.ok({ type: 'get', namespace: NS, key: 'k' }).type).toBe('got');
    h.advance(1);
    expect(h.code({ type: 'get', namespace: NS, key: 'k' })).toBe('key_not_found');
    expect(h.sm.timeMs).toBe(start + 10_000);
  });

  it('derives versions from the log position and the cluster key only', () => {
    const a = new CoordHarness({ versionKey: 'one' });
    const b = new CoordHarness({ versionKey: 'one' }, 5); // different clock, same positions
    const c = new CoordHarness({ versionKey: 'two' });
    const op = { type: 'set', namespace: NS, key: 'k', value: 1 } as const;
    const va = entryOf(a.ok(op)).version;
    expect(entryOf(b.ok(op)).version).toBe(va);
    expect(entryOf(c.ok(op)).version).not.toBe(va);
  });

  it('refuses to apply an index that does not increase', () => {
    const h = new CoordHarness();
    h.ok({ type: 'noop' });
    expect(() => h.sm.apply({ nowMs: 0, op: { type: 'noop' } }, { index: 1, term: 1 })).toThrow(
      /indexes must increase/,
    );
  });

  it('turns undecodable log bytes into a decode_error result', () => {
    const h = new CoordHarness();
    const out = h.sm.applyBytes(new Uint8Array([1, 2, 3]), { index: 1, term: 1 });
    expect(!out.result.ok && out.result.error.code).toBe('decode_error');
    expect(h.sm.applied.index).toBe(1);
  });
});

describe('expire', () => {
  it('removes expired entries and reports counts; reads never depended on it', () => {
    const h = new CoordHarness();
    h.ok({ type: 'set', namespace: NS, key: 'a', value: 1, ttlSeconds: 1 });
    h.ok({ type: 'set', namespace: NS, key: 'b', value: 1, ttlSeconds: 5 });
    h.advance(2000);
    expect(h.ok({ type: 'expire' })).toEqual({ type: 'expired', entries: 1, locks: 0, waiters: 0, sessions: 0 });
    expect(h.ok({ type: 'expire' })).toMatchObject({ entries: 0 });
    expect(h.ok({ type: 'get', namespace: NS, key: 'b' }).type).toBe('got');
  });
});

function stripHeader(snapshot: Uint8Array): unknown {
  const body = JSON.parse(new TextDecoder().decode(snapshot.subarray(4)));
  delete body.index;
  delete body.nowMs;
  return body;
}

describe('value ownership', () => {
  it('keeps its own frozen copy: neither the proposer nor a reader can change replicated state', () => {
    const h = new CoordHarness();
    const mine = { nested: { n: 1 }, list: [1] };
    h.ok({ type: 'set', namespace: NS, key: 'k', value: mine });
    mine.nested.n = 2;
    mine.list.push(2);
    const got = entryOf(h.ok({ type: 'get', namespace: NS, key: 'k' }));
    expect(got.value).toEqual({ nested: { n: 1 }, list: [1] });
    expect(Object.isFrozen(mine)).toBe(false);
    expect(() => {
      (got.value as { nested: { n: number } }).nested.n = 3;
    }).toThrow(TypeError);
  });

  it('stores values in canonical key order, so equal values give equal snapshots', () => {
    const a = new CoordHarness();
    const b = new CoordHarness();
    a.ok({ type: 'set', namespace: NS, key: 'k', value: { z: 1, a: { y: 2, b: 3 }, 10: 'x', 9: 'y' } });
    b.ok({ type: 'set', namespace: NS, key: 'k', value: { 9: 'y', a: { b: 3, y: 2 }, 10: 'x', z: 1 } });
    expect(a.sm.snapshot()).toEqual(b.sm.snapshot());
    expect(JSON.stringify(entryOf(a.ok({ type: 'get', namespace: NS, key: 'k' })).value)).toBe(
      '{"9":"y","10":"x","a":{"b":3,"y":2},"z":1}',
    );
  });
});

describe('command stamps', () => {
  it('refuses a command whose nowMs is not an integer time, without moving time', () => {
    const h = new CoordHarness();
    h.ok({ type: 'noop' });
    const t = h.sm.timeMs;
    for (const nowMs of [Number.NaN, -1, 1.5, 1e300]) {
      const out = h.applyCommand({ nowMs, op: { type: 'set', namespace: NS, key: 'k', value: 1 } });
      expect(!out.result.ok && out.result.error.code).toBe('invalid_argument');
    }
    expect(h.sm.timeMs).toBe(t);
    expect(h.code({ type: 'get', namespace: NS, key: 'k' })).toBe('key_not_found');
    expect(h.code({ type: 'list', namespace: NS, q: 'x'.repeat(1025) })).toBe('invalid_argument');
  });
});
