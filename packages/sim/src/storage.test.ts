import { isParleyError, type KVStorage, type RaftLogStorage } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { Simulation } from './simulation.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

function diskWorld(seed: number, disk = {}) {
  const sim = new Simulation({ seed });
  const host = sim.addHost(
    'a',
    (ctx) => ({ kv: ctx.kv('main'), lazy: ctx.kv('lazy', { syncWrites: false }), log: ctx.raftLog() }),
    {
      disk,
    },
  );
  return { sim, host };
}

describe('SimKVStorage', () => {
  it('keeps acknowledged writes across a crash and loses writes still in flight', async () => {
    const { sim, host } = diskWorld(1);
    await sim.runFor(1);
    const kv: KVStorage = host.app!.kv;
    let acked = false;
    void kv.save(['k', '1'], enc('one')).then(() => (acked = true));
    await sim.runUntil(() => acked, 100);
    void kv.batch([
      { type: 'put', key: ['k', '2'], data: enc('two') },
      { type: 'del', key: ['k', '1'] },
    ]);
    expect(dec(await kv.load(['k', '2']))).toBe('two'); // visible before it is durable
    host.crash();
    host.restart();
    await sim.runFor(1);
    const again = host.app!.kv;
    expect(dec(await again.load(['k', '1']))).toBe('one');
    expect(await again.load(['k', '2'])).toBeUndefined(); // the batch vanished whole
  });

  it('loadRange returns the prefix in element-wise key order; removeRange deletes it', async () => {
    const { sim, host } = diskWorld(2);
    await sim.runFor(1);
    const kv = host.app!.kv;
    await Promise.all([
      kv.save(['n', 'b'], enc('b')),
      kv.save(['n', 'a', 'x'], enc('ax')),
      kv.save(['n', 'a'], enc('a')),
      kv.save(['m'], enc('m')),
      sim.runFor(10),
    ]);
    expect((await kv.loadRange(['n'])).map((c) => c.key.join('/'))).toEqual(['n/a', 'n/a/x', 'n/b']);
    await Promise.all([kv.removeRange(['n']), sim.runFor(10)]);
    expect(await kv.loadRange([])).toEqual([{ key: ['m'], data: enc('m') }]);
  });

  it('with syncWrites off, a crash loses acknowledged writes not yet flushed', async () => {
    const { sim, host } = diskWorld(3, { flushIntervalMs: 50 });
    await sim.runFor(1);
    const lazy = host.app!.lazy;
    await lazy.save(['x'], enc('1')); // resolves at once
    await sim.runFor(60); // flushed
    await lazy.save(['y'], enc('2'));
    host.restart();
    await sim.runFor(1);
    expect(dec(await host.app!.lazy.load(['x']))).toBe('1');
    expect(await host.app!.lazy.load(['y'])).toBeUndefined();
  });

  it('tears the tail append on a crash when asked to', async () => {
    const { sim, host } = diskWorld(4, { tornWriteRate: 1 });
    await sim.runFor(1);
    void host.app!.kv.save(['log', '1'], enc('a long record'));
    host.restart();
    await sim.runFor(1);
    const torn = await host.app!.kv.load(['log', '1']);
    expect(torn).toBeDefined();
    expect(torn!.length).toBeLessThan(enc('a long record').length);
    expect(dec(torn)).toBe('a long record'.slice(0, torn!.length));
  });

  it('fails reads with a transient, retryable error at the configured rate', async () => {
    const { sim, host } = diskWorld(5, { readErrorRate: 0.5 });
    await sim.runFor(1);
    let failures = 0;
    for (let i = 0; i < 100; i++) {
      try {
        await host.app!.kv.load(['x']);
      } catch (err) {
        expect(isParleyError(err, 'unavailable')).toBe(true);
        expect((err as { retryable: boolean }).retryable).toBe(true);
        failures++;
      }
    }
    expect(failures).toBeGreaterThan(30);
    expect(failures).toBeLessThan(70);
  });

  it('a crashed handle never settles again', async () => {
    const { sim, host } = diskWorld(6);
    await sim.runFor(1);
    const old = host.app!.kv;
    host.crash();
    let settled = false;
    void old.load(['x']).finally(() => (settled = true));
    await sim.runFor(100);
    expect(settled).toBe(false);
  });
});

describe('SimRaftLogStorage', () => {
  const entry = (index: number, term: number) => ({ index, term, type: 'normal' as const, data: enc(`e${index}`) });

  it('serves reads from memory, keeps only synced saves across a crash', async () => {
    const { sim, host } = diskWorld(7);
    await sim.runFor(1);
    const log: RaftLogStorage = host.app!.log;
    await Promise.all([
      log.save({ entries: [entry(1, 1), entry(2, 1), entry(3, 1)], hardState: { term: 1, vote: 'a', commit: 2 } }),
      sim.runFor(10),
    ]);
    void log.save({ entries: [entry(3, 2), entry(4, 2)], hardState: { term: 2, vote: 'a', commit: 3 } });
    expect(log.lastIndex()).toBe(4);
    expect(log.term(3)).toBe(2);
    host.restart();
    await sim.runFor(1);
    const again = host.app!.log;
    expect(again.lastIndex()).toBe(3);
    expect(again.term(3)).toBe(1);
    expect(again.initialState().hardState).toEqual({ term: 1, vote: 'a', commit: 2 });
  });

  it('an unsynced save resolves at once, is lost in a crash, and is made durable by a later sync or a flush', async () => {
    const { sim, host } = diskWorld(9, { flushIntervalMs: 50 });
    await sim.runFor(1);
    const log: RaftLogStorage = host.app!.log;
    await Promise.all([
      log.save({ entries: [entry(1, 1), entry(2, 1), entry(3, 1)], hardState: { term: 1, vote: 'a', commit: 1 } }),
      sim.runFor(10),
    ]);
    // A commit-only update, unsynced: acknowledged at once, lost in a crash before the flush.
    await log.save({ hardState: { term: 1, vote: 'a', commit: 3 }, sync: false });
    expect(log.initialState().hardState.commit).toBe(3);
    host.crash();
    host.restart();
    await sim.runFor(1);
    let again: RaftLogStorage = host.app!.log;
    expect(again.initialState().hardState).toEqual({ term: 1, vote: 'a', commit: 1 });
    expect(again.lastIndex()).toBe(3); // the commit index went back, the synced entries stayed
    // Followed by a synced save: durable with it, in issue order.
    await again.save({ hardState: { term: 1, vote: 'a', commit: 2 }, sync: false });
    await Promise.all([again.save({ entries: [entry(4, 1)] }), sim.runFor(10)]);
    host.crash();
    host.restart();
    await sim.runFor(1);
    again = host.app!.log;
    expect(again.initialState().hardState.commit).toBe(2);
    expect(again.lastIndex()).toBe(4);
    // Alone: durable once the page cache is flushed.
    await again.save({ hardState: { term: 1, vote: 'a', commit: 4 }, sync: false });
    await sim.runFor(60);
    host.crash();
    host.restart();
    await sim.runFor(1);
    expect(host.app!.log.initialState().hardState.commit).toBe(4);
  });

  it('snapshots, compacts and reports compacted / unavailable indexes with typed errors', async () => {
    const { sim, host } = diskWorld(8);
    await sim.runFor(1);
    const log = host.app!.log;
    const work = (async () => {
      await log.save({ entries: [1, 2, 3, 4, 5].map((i) => entry(i, 1)) });
      await log.createSnapshot(3, { voters: ['a'], learners: [] }, enc('state@3'));
      await log.compact(3);
    })();
    await Promise.all([work, sim.runFor(50)]);
    expect(log.firstIndex()).toBe(4);
    expect(log.term(3)).toBe(1);
    expect(log.snapshot().meta.index).toBe(3);
    expect(() => log.entries(2, 5)).toThrowError(expect.objectContaining({ code: 'compacted' }));
    expect(() => log.entries(4, 7)).toThrowError(expect.objectContaining({ code: 'log_unavailable' }));
    expect(log.entries(4, 6).map((e) => e.index)).toEqual([4, 5]);
    expect(log.entries(4, 6, 1)).toHaveLength(1);
    host.restart();
    await sim.runFor(1);
    expect(host.app!.log.firstIndex()).toBe(4);
    expect(host.app!.log.snapshot().meta.confState.voters).toEqual(['a']);
  });
});

describe('key order and snapshots agree with the on-disk stores', () => {
  it('orders keys by code point, so an astral character sorts after U+FFFD', async () => {
    const { compareKeys } = await import('./storage.js');
    expect(compareKeys(['\u{1F600}'], ['\uFFFD'])).toBeGreaterThan(0);
    expect(compareKeys(['a'], ['a', 'b'])).toBeLessThan(0);
    expect(compareKeys(['b'], ['a', 'z'])).toBeGreaterThan(0);
  });

  it('refuses a snapshot older than the stored one with invalid_argument, as the level and memory stores do', async () => {
    const { sim, host } = diskWorld(3);
    await sim.runFor(1);
    const log: RaftLogStorage = host.app!.log;
    const conf = { voters: ['a'], learners: [] };
    const snap = (index: number) => ({ meta: { index, term: 1, confState: conf }, data: enc(`s${index}`) });
    let done = false;
    void log.save({ snapshot: snap(10) }).then(() => (done = true));
    await sim.runUntil(() => done, 100);
    await expect(log.save({ snapshot: snap(5) })).rejects.toSatisfy((e) => isParleyError(e, 'invalid_argument'));
    expect(log.snapshot().meta.index).toBe(10);
  });
});
