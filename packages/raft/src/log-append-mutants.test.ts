/**
 * The follower side of RaftLog.maybeAppend at the entry level, found
 * unchecked by the mutation run (docs/simulation.md, "Mutation testing
 * (Stryker)"): entries the log already has are not appended (and so not
 * persisted) again, only the part from the first conflict is, and the commit
 * index follows the leader's only up to the last entry the request vouches for.
 */
import type { RaftEntry } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { RaftLog } from './log.js';
import { MemoryRaftStorage } from './storage.js';

const enc = new TextEncoder();

function ent(term: number, index: number): RaftEntry {
  return { term, index, type: 'normal', data: enc.encode(`${term}/${index}`) };
}

/** A log whose entries 1..3 (term 1) are all stable. */
function stableLog(): RaftLog {
  const log = new RaftLog(new MemoryRaftStorage({ entries: [ent(1, 1), ent(1, 2), ent(1, 3)] }));
  expect(log.unstable).toEqual([]);
  expect(log.lastIndex()).toBe(3);
  return log;
}

function terms(log: RaftLog): number[] {
  const out: number[] = [];
  for (let i = log.firstIndex(); i <= log.lastIndex(); i++) out.push(log.term(i));
  return out;
}

describe('RaftLog.maybeAppend', () => {
  it('a retransmitted append of entries the log has leaves nothing new to persist', () => {
    const log = stableLog();
    expect(log.maybeAppend(0, 0, 0, [ent(1, 1), ent(1, 2)])).toBe(2);
    expect(log.maybeAppend(1, 1, 0, [ent(1, 2), ent(1, 3)])).toBe(3);
    expect(log.unstable).toEqual([]);
    expect(log.unstableOffset).toBe(4);
    expect(terms(log)).toEqual([1, 1, 1]);
  });

  it('appends only the entries after those it already has', () => {
    const log = stableLog();
    expect(log.maybeAppend(1, 1, 0, [ent(1, 2), ent(1, 3), ent(1, 4), ent(1, 5)])).toBe(5);
    expect(log.unstable.map((e) => e.index)).toEqual([4, 5]);
    expect(log.unstableOffset).toBe(4);
  });

  it('replaces the log from the first conflicting entry on, keeping the matching ones before it', () => {
    const log = stableLog();
    expect(log.maybeAppend(1, 1, 0, [ent(1, 2), ent(2, 3), ent(2, 4)])).toBe(4);
    expect(log.unstable.map((e) => [e.term, e.index])).toEqual([
      [2, 3],
      [2, 4],
    ]);
    expect(log.unstableOffset).toBe(3);
    expect(terms(log)).toEqual([1, 1, 2, 2]);
  });

  it('commits up to the leader commit, but no further than the last entry of the request', () => {
    const log = stableLog();
    expect(log.maybeAppend(1, 1, 10, [ent(1, 2)])).toBe(2);
    expect(log.committed).toBe(2);
    expect(log.maybeAppend(2, 1, 3, [])).toBe(2);
    expect(log.committed).toBe(2);
    expect(log.maybeAppend(3, 1, 3, [])).toBe(3);
    expect(log.committed).toBe(3);
  });

  it('a request whose previous entry does not match changes nothing', () => {
    const log = stableLog();
    expect(log.maybeAppend(3, 2, 3, [ent(2, 4)])).toBeUndefined();
    expect(log.maybeAppend(5, 1, 3, [ent(1, 6)])).toBeUndefined();
    expect(log.committed).toBe(0);
    expect(log.unstable).toEqual([]);
    expect(terms(log)).toEqual([1, 1, 1]);
  });
});
