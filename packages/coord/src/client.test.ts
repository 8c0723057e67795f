import { KeyNotFoundError, LeaseLostError, VersionMismatchError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import {
  acquireLease,
  attachLease,
  type CoordCall,
  cooperativeWrite,
  coordDocStore,
  doc,
  errorFromPayload,
  SessionSequencer,
  unwrap,
} from './client.js';
import { CoordHarness } from './harness.js';
import type { JsonValue } from './json.js';

/** A caller that submits straight to one state machine, one microtask later (so calls interleave). */
function caller(h: CoordHarness): CoordCall {
  return async (op) => {
    await Promise.resolve();
    return unwrap(h.run(op));
  };
}

describe('errors from results', () => {
  it('rebuilds the typed classes with the original message', () => {
    const h = new CoordHarness();
    const r = h.run({ type: 'get', namespace: 'n', key: 'k' });
    expect(() => unwrap(r)).toThrow(KeyNotFoundError);
    const v = h.run({ type: 'set', namespace: 'n', key: 'k', value: 1, ifVersion: 'abc' });
    if (v.ok) throw new Error('expected failure');
    const err = errorFromPayload(v.error);
    expect(err).toBeInstanceOf(VersionMismatchError);
    expect(err.message).toBe(v.error.message);
    expect(err.status).toBe(409);
  });
});

describe('doc', () => {
  it('runs the CAS loop: concurrent updaters lose no increments', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const counters = doc<{ runs: number }>(coordDocStore(call, 'metrics'), 'daily');
    await Promise.all(
      Array.from({ length: 5 }, () => counters.update((c) => ({ ...c, runs: c.runs + 1 }), { create: { runs: 0 } })),
    );
    const got = await counters.get();
    expect(got?.value).toEqual({ runs: 5 });
    await counters.delete();
    expect(await counters.get()).toBeUndefined();
  });

  it('fails with key_not_found on an absent document without create', async () => {
    const h = new CoordHarness();
    const d = doc(coordDocStore(caller(h), 'metrics'), 'none');
    await expect(d.update((x) => x)).rejects.toBeInstanceOf(KeyNotFoundError);
  });

  it('gives up after maxAttempts with the last conflict', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const store = coordDocStore(call, 'metrics');
    await store.set('hot', 0, { ifNotExists: true });
    let calls = 0;
    const d = doc<number>(
      {
        get: store.get,
        delete: store.delete,
        // A competing writer sneaks in between every read and write.
        async set(key, value, condition) {
          await call({ type: 'set', namespace: 'metrics', key, value: -1 });
          return store.set(key, value, condition);
        },
      },
      'hot',
    );
    await expect(
      d.update(
        (n) => {
          calls++;
          return n + 1;
        },
        { maxAttempts: 3 },
      ),
    ).rejects.toBeInstanceOf(VersionMismatchError);
    expect(calls).toBe(3);
  });

  it('parses and serializes through a schema', async () => {
    const h = new CoordHarness();
    class Queue {
      constructor(readonly items: string[]) {}
      push(x: string): Queue {
        return new Queue([...this.items, x]);
      }
    }
    const schema = {
      parse(v: unknown): Queue {
        const items = (v as { items?: unknown }).items;
        if (!Array.isArray(items)) throw new TypeError('not a queue');
        return new Queue(items as string[]);
      },
      serialize(q: Queue): JsonValue {
        return { items: q.items };
      },
    };
    const q = doc(coordDocStore(caller(h), 'queues'), 'default', schema);
    await q.update((x) => x.push('a'), { create: new Queue([]) });
    const r = await q.update((x) => x.push('b'));
    expect(r.value).toBeInstanceOf(Queue);
    expect(r.value.items).toEqual(['a', 'b']);
    expect(h.ok({ type: 'get', namespace: 'queues', key: 'default' })).toMatchObject({
      entry: { value: { items: ['a', 'b'] } },
    });
  });
});

describe('lease handles', () => {
  it('acquire, updateState absorbing a cooperative write, renew, release', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const lease = await acquireLease(call, 'state', 'etl/run-123', { ttlSeconds: 120, holder: 'w1' });
    if (!lease) throw new Error('not acquired');
    expect(lease.holder).toBe('w1');
    expect(await acquireLease(call, 'state', 'etl/run-123', { ttlSeconds: 120, holder: 'w2' })).toBeUndefined();
    await lease.write({ progress: 0 });
    await cooperativeWrite(call, 'state', 'etl/run-123', (s) => ({ ...(s as object), cancel: true }));
    const state = await lease.updateState((s) => ({ ...(s as object), progress: 0.5 }));
    expect(state).toEqual({ progress: 0.5, cancel: true });
    h.advance(60_000);
    await lease.renew();
    expect(lease.deadlineAt).toBe(h.nowMs + 120_000);
    await lease.release({ status: 'completed' });
    await expect(lease.write({})).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('a paused holder is fenced once another holder stole the expired lease', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const a = await acquireLease(call, 'state', 'k', { ttlSeconds: 10, holder: 'w1' });
    h.advance(11_000);
    const b = await acquireLease(call, 'state', 'k', { ttlSeconds: 10, holder: 'w2' });
    expect(b?.epoch).toBeGreaterThan(a?.epoch ?? Number.POSITIVE_INFINITY);
    await expect(a?.updateState(() => 1)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(a?.renew()).rejects.toBeInstanceOf(LeaseLostError);
    await b?.write('mine');
  });

  it('stateFn makes the acquisition a transition; throwing aborts with nothing written', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const claimIfPending = (s: JsonValue | null): JsonValue => {
      if (s && (s as { status?: string }).status === 'completed') throw new Error('already done');
      return { ...((s as object) ?? {}), status: 'running' };
    };
    const a = await acquireLease(call, 'state', 'job', { ttlSeconds: 10, holder: 'w1', stateFn: claimIfPending });
    expect(a?.state).toEqual({ status: 'running' });
    await a?.release({ status: 'completed' });
    const before = h.sm.snapshot();
    await expect(
      acquireLease(call, 'state', 'job', { ttlSeconds: 10, holder: 'w2', stateFn: claimIfPending }),
    ).rejects.toThrow('already done');
    const after = h.sm.snapshot();
    // Only the read advanced the log: entries are untouched.
    const body = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b.subarray(4))).namespaces;
    expect(body(after)).toEqual(body(before));
  });

  it('racing stateFn acquisitions retry and exactly one period survives', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const results = await Promise.all(
      ['w1', 'w2', 'w3'].map((holder) =>
        acquireLease(call, 'state', 'race', {
          ttlSeconds: 10,
          holder,
          stateFn: (s) => ({ n: ((s as { n?: number } | null)?.n ?? 0) + 1 }),
        }),
      ),
    );
    const winners = results.filter((r) => r !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.state).toEqual({ n: 1 });
  });

  it('attachLease re-enters a live period without a bump and refuses an expired one', async () => {
    const h = new CoordHarness();
    const call = caller(h);
    const a = await acquireLease(call, 'state', 'k', { ttlSeconds: 10, holder: 'w1' });
    const same = await attachLease(call, 'state', 'k', 'w1', 10);
    expect(same?.epoch).toBe(a?.epoch);
    await same?.updateState(() => ({ from: 'attached' }));
    // Two handles on one period converge instead of fencing each other.
    expect(await a?.updateState((s) => ({ ...(s as object), also: true }))).toEqual({ from: 'attached', also: true });
    expect(await attachLease(call, 'state', 'k', 'w2', 10)).toBeUndefined();
    h.advance(10_000);
    expect(await attachLease(call, 'state', 'k', 'w1', 10)).toBeUndefined();
  });
});

describe('SessionSequencer', () => {
  it('numbers commands, acknowledges below the oldest in flight, and dedups retries end to end', () => {
    const h = new CoordHarness();
    const seqr = new SessionSequencer(h.register(), 3);
    const c1 = seqr.command({ type: 'set', namespace: 'n', key: 'a', value: 1 }, h.nowMs);
    const c2 = seqr.command({ type: 'set', namespace: 'n', key: 'b', value: 1 }, h.nowMs);
    expect([c1.seq, c1.ackSeq, c2.seq, c2.ackSeq]).toEqual([1, 0, 2, 0]);
    const r2 = h.applyCommand(c2).result;
    seqr.done(2);
    expect(seqr.ackSeq()).toBe(0); // 1 is still in flight
    const r1 = h.applyCommand(c1).result;
    // A duplicate of c1 (re-proposed by a new leader) returns the first result.
    h.advance(1000);
    expect(h.applyCommand(seqr.retry(c1, h.nowMs)).result).toEqual(r1);
    seqr.done(1);
    const c3 = seqr.command({ type: 'get', namespace: 'n', key: 'a' }, h.nowMs);
    expect(c3.ackSeq).toBe(2);
    h.applyCommand(c3);
    // Acknowledged results are forgotten: a late duplicate of c2 is refused, never re-applied.
    const late = h.applyCommand(seqr.retry(c2, h.nowMs)).result;
    expect(!late.ok && late.error.details.reason).toBe('stale_sequence');
    expect(r2.ok).toBe(true);
    seqr.command({ type: 'noop' }, 0);
    seqr.command({ type: 'noop' }, 0);
    expect(() => seqr.command({ type: 'noop' }, 0)).toThrow(/no room in its window/);
    expect(seqr.pending).toBe(3);
  });

  it('holds later commands back while the oldest is unanswered, so its retry still finds its first result', () => {
    const limit = 8;
    const h = new CoordHarness({ limits: { maxResultsPerSession: limit } });
    const seqr = new SessionSequencer(h.register(), limit);
    // A claim applied, its answer lost on the way back: it stays in flight.
    const claim = seqr.command({ type: 'claim', namespace: 'n', key: 'c', value: 'mine' }, h.nowMs);
    const first = h.applyCommand(claim).result;
    // Later commands are answered meanwhile, as many as the window lets through.
    let issued = 0;
    while (seqr.room > 0) {
      const c = seqr.command({ type: 'set', namespace: 'n', key: `k${issued++}`, value: 1 }, h.nowMs);
      h.applyCommand(c);
      seqr.done(c.seq as number);
    }
    expect(issued).toBe(limit - 1);
    expect(seqr.span).toBe(limit);
    expect(() => seqr.command({ type: 'noop' }, 0)).toThrow(/no room/);
    // The retry is answered from the session table: the claim won, once.
    const again = h.applyCommand(seqr.retry(claim, h.nowMs)).result;
    expect(again).toEqual(first);
    expect(first.ok && first.value.type === 'claim' && first.value.won).toBe(true);
    seqr.done(claim.seq as number);
    expect([seqr.span, seqr.room]).toEqual([0, limit]);
  });
});
