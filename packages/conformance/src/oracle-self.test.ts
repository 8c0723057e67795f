/**
 * The oracle checked on itself, without etcd: two built-in nodes agree on
 * every kind of operation (tokens map one to one), and a node with a planted
 * bug (CAS without its version compare) is caught at the step it diverges.
 */
import { testSeed, withSeed } from '@parley/interface';
import { afterAll, describe, expect, it } from 'vitest';
import { raftBackend } from './backends.js';
import { JumpClock } from './clock.js';
import { runOracle } from './oracle.js';
import { dropVersionCompareOnNode } from './planted.js';

describe('oracle on two built-in nodes', () => {
  const raft = raftBackend();
  afterAll(() => raft.closeAll());

  it('agree on entries, claims, lists, locks, fenced writes and leases', async () => {
    await withSeed(testSeed(7), async (seed) => {
      const [clockA, clockB] = [new JumpClock(), new JumpClock()];
      const kinds = ['entry', 'claim', 'list', 'lock', 'lease', 'time'] as const;
      const report = await runOracle(
        seed,
        300,
        kinds,
        { node: await raft.node({ clock: clockA }), clock: clockA },
        { node: await raft.node({ clock: clockB }), clock: clockB },
      );
      expect(report.difference, JSON.stringify(report.difference)).toBeUndefined();
      expect(report.orderViolations).toEqual({ a: [], b: [] });
      for (const outcome of [
        'acquire:ok',
        'acquire:lock_held',
        'release:ok',
        'set:fence_stale',
        'lease:ok',
        'lease:lock_held',
        'lease-write:ok',
        'lease-write:lease_lost',
        'set:version_mismatch',
      ]) {
        expect(report.coverage[outcome], `${outcome} in ${JSON.stringify(report.coverage)}`).toBeGreaterThan(0);
      }
    });
  }, 60_000);

  it('a planted CAS without its version compare is caught where it first differs', async () => {
    await withSeed(testSeed(7), async (seed) => {
      const planted = dropVersionCompareOnNode(await raft.node());
      const report = await runOracle(
        seed,
        300,
        ['entry', 'claim', 'list'],
        { node: await raft.node() },
        { node: planted },
      );
      expect(report.difference).toBeDefined();
      expect(report.difference?.op).toMatchObject({ f: 'set', ifVersion: expect.any(String) });
      expect(report.difference?.a).toEqual({ error: 'version_mismatch' });
      expect('ok' in (report.difference?.b ?? {})).toBe(true);
    });
  }, 60_000);
});
