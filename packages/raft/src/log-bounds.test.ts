/**
 * RaftLog's own rules, driven directly: truncation inside the unstable tail,
 * the up-to-date comparison of §5.4.1, and the guards that refuse to rewrite
 * or run past committed entries.
 */
import type { RaftEntry } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { RaftLog } from './log.js';
import { MemoryRaftStorage } from './storage.js';

const enc = new TextEncoder();

function ent(term: number, index: number): RaftEntry {
  return { term, index, type: 'normal', data: enc.encode(`${term}/${index}`) };
}

function terms(log: RaftLog): number[] {
  const out: number[] = [];
  for (let i = log.firstIndex(); i <= log.lastIndex(); i++) out.push(log.term(i));
  return out;
}

describe('RaftLog', () => {
  it('a conflicting append inside the unstable tail keeps the entries before it', () => {
    const log = new RaftLog(new MemoryRaftStorage());
    log.append([ent(1, 1), ent(1, 2), ent(1, 3), ent(1, 4)]);
    expect(log.unstableOffset).toBe(1);
    log.append([ent(2, 3)]);
    expect(terms(log)).toEqual([1, 1, 2]);
    expect(log.lastIndex()).toBe(3);
  });

  it('§5.4.1: a later last term is more up-to-date whatever the lengths; on equal terms the longer log is', () => {
    const log = new RaftLog(new MemoryRaftStorage());
    log.append([ent(1, 1), ent(2, 2)]);
    expect(log.isUpToDate(5, 1)).toBe(false); // longer, but an older last term
    expect(log.isUpToDate(1, 3)).toBe(true); // shorter, but a newer last term
    expect(log.isUpToDate(1, 2)).toBe(false);
    expect(log.isUpToDate(2, 2)).toBe(true);
  });

  it('refuses to overwrite a committed entry or to commit past the last entry', () => {
    const log = new RaftLog(new MemoryRaftStorage());
    log.append([ent(1, 1), ent(1, 2), ent(1, 3)]);
    log.commitTo(2);
    expect(() => log.append([ent(2, 2)])).toThrow(/overwrite committed/);
    expect(() => log.maybeAppend(1, 1, 2, [ent(2, 2)])).toThrow(/conflicts with committed/);
    expect(() => log.commitTo(4)).toThrow(/out of range/);
    expect(terms(log)).toEqual([1, 1, 1]);
    expect(log.committed).toBe(2);
    // Appending right after the committed prefix is allowed and truncates the rest.
    log.append([ent(2, 3)]);
    expect(terms(log)).toEqual([1, 1, 2]);
  });
});
