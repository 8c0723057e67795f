/**
 * RaftLog rules the mutation run (docs/simulation.md, "Mutation testing
 * (Stryker)") found unchecked: size limits on slices (at least one entry, a
 * storage part cut short ends the slice), the applied index a restarted log
 * resumes from, terms around an unpersisted snapshot, the range checks of
 * slice and appliedTo, and stableTo/stableSnapTo dropping only what was
 * persisted as it still is.
 */
import { CompactedError, LogUnavailableError, type RaftEntry } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { ENTRY_OVERHEAD_BYTES, entryBytes, limitBytes, RaftLog } from './log.js';
import { MemoryRaftStorage } from './storage.js';

/** An entry of `size` data bytes. */
function ent(term: number, index: number, size = 10): RaftEntry {
  return { term, index, type: 'normal', data: new Uint8Array(size) };
}

const SNAP_CONF = { voters: ['1'], learners: [] };

describe('size limits', () => {
  it('an entry counts its data plus the fixed overhead', () => {
    expect(entryBytes(ent(1, 1, 100))).toBe(100 + ENTRY_OVERHEAD_BYTES);
  });

  it('limitBytes keeps the longest prefix within the limit, and at least one entry', () => {
    const ents = [ent(1, 1, 76), ent(1, 2, 76), ent(1, 3, 76)]; // 100 bytes each
    expect(limitBytes(ents, undefined)).toBe(ents);
    expect(limitBytes(ents, 300)).toBe(ents);
    expect(limitBytes(ents, 299).map((e) => e.index)).toEqual([1, 2]);
    expect(limitBytes(ents, 200).map((e) => e.index)).toEqual([1, 2]);
    expect(limitBytes(ents, 199).map((e) => e.index)).toEqual([1]);
    expect(limitBytes(ents, 1).map((e) => e.index)).toEqual([1]);
    expect(limitBytes([ents[0] as RaftEntry], 1)).toHaveLength(1);
  });

  it('a slice across storage and the unstable tail stops where the storage part was cut short', () => {
    const log = new RaftLog(new MemoryRaftStorage({ entries: [ent(1, 1, 76), ent(1, 2, 76), ent(1, 3, 76)] }));
    log.append([ent(1, 4, 76), ent(1, 5, 76)]);
    expect(log.slice(1, 6, 200).map((e) => e.index)).toEqual([1, 2]);
    expect(log.slice(2, 6, 400).map((e) => e.index)).toEqual([2, 3, 4, 5]);
    expect(log.slice(2, 6, 350).map((e) => e.index)).toEqual([2, 3, 4]);
    expect(log.slice(4, 6, 100).map((e) => e.index)).toEqual([4]);
  });

  it('never skips over a large stored entry to the small unstable ones after it', () => {
    const log = new RaftLog(new MemoryRaftStorage({ entries: [ent(1, 1, 76), ent(1, 2, 76), ent(1, 3, 500)] }));
    log.append([ent(1, 4, 10), ent(1, 5, 10)]);
    expect(log.slice(1, 6, 300).map((e) => e.index)).toEqual([1, 2]);
  });
});

describe('range checks', () => {
  it('slice refuses compacted and missing ranges; an empty range is empty', () => {
    const log = new RaftLog(
      new MemoryRaftStorage({
        snapshot: { meta: { index: 2, term: 1, confState: SNAP_CONF }, data: new Uint8Array(0) },
        entries: [ent(1, 3), ent(1, 4)],
      }),
    );
    expect(() => log.slice(2, 4)).toThrow(CompactedError);
    expect(() => log.slice(3, 6)).toThrow(LogUnavailableError);
    expect(log.slice(3, 5).map((e) => e.index)).toEqual([3, 4]);
    expect(log.slice(4, 4)).toEqual([]);
    expect(log.append([])).toBe(4);
  });

  it('term refuses an index past the last entry; maybeTerm answers undefined', () => {
    const log = new RaftLog(new MemoryRaftStorage({ entries: [ent(1, 1)] }));
    expect(() => log.term(2)).toThrow(LogUnavailableError);
    expect(log.maybeTerm(2)).toBeUndefined();
    expect(log.maybeTerm(-1)).toBeUndefined();
  });

  it('appliedTo moves within [applied, committed], and 0 changes nothing', () => {
    const log = new RaftLog(new MemoryRaftStorage({ entries: [ent(1, 1), ent(1, 2), ent(1, 3)] }));
    log.commitTo(2);
    log.appliedTo(1);
    expect(() => log.appliedTo(3)).toThrow(/out of range/);
    log.appliedTo(2);
    log.appliedTo(2); // again: nothing new applied
    expect(() => log.appliedTo(1)).toThrow(/out of range/);
    log.appliedTo(0);
    expect(log.applied).toBe(2);
  });
});

describe('a log restarted from storage', () => {
  it('resumes from the applied index it is given, never past the commit index nor before the snapshot', () => {
    const storage = () =>
      new MemoryRaftStorage({
        snapshot: { meta: { index: 2, term: 1, confState: SNAP_CONF }, data: new Uint8Array(0) },
        entries: [ent(1, 3), ent(1, 4), ent(1, 5)],
        hardState: { term: 1, vote: '', commit: 4 },
      });
    expect(new RaftLog(storage()).applied).toBe(2);
    expect(new RaftLog(storage(), 0).applied).toBe(2);
    expect(new RaftLog(storage(), 3).applied).toBe(3);
    expect(new RaftLog(storage(), 9).applied).toBe(4);
    expect(new RaftLog(storage()).committed).toBe(4);
  });
});

describe('an unpersisted snapshot', () => {
  it('answers its own index and term, refuses older indexes, and is dropped only once persisted at that index', () => {
    const log = new RaftLog(new MemoryRaftStorage({ entries: [ent(1, 1)] }));
    log.restore({ meta: { index: 5, term: 3, confState: SNAP_CONF }, data: new Uint8Array(0) });
    expect(log.term(5)).toBe(3);
    expect(log.maybeTerm(5)).toBe(3);
    expect(() => log.term(4)).toThrow(CompactedError);
    expect(log.maybeTerm(4)).toBeUndefined();
    expect(log.firstIndex()).toBe(6);
    log.stableSnapTo(4);
    expect(log.unstableSnapshot?.meta.index).toBe(5);
    log.stableSnapTo(5);
    expect(log.unstableSnapshot).toBeUndefined();
  });
});

describe('stableTo', () => {
  it('drops the persisted prefix of the unstable tail and keeps the rest', () => {
    const log = new RaftLog(new MemoryRaftStorage());
    log.append([ent(1, 1), ent(1, 2), ent(1, 3)]);
    log.stableTo(1, 1);
    expect(log.unstable.map((e) => e.index)).toEqual([2, 3]);
    expect(log.unstableOffset).toBe(2);
  });

  it('keeps an entry that was replaced after it was handed to storage', () => {
    const log = new RaftLog(new MemoryRaftStorage());
    log.append([ent(1, 1), ent(1, 2), ent(1, 3)]);
    log.append([ent(2, 3)]); // entry 3 replaced by a later term before the write of the old one completed
    log.stableTo(3, 1);
    expect(log.unstable.map((e) => [e.term, e.index])).toEqual([
      [1, 1],
      [1, 2],
      [2, 3],
    ]);
    log.stableTo(5, 2); // past the tail: nothing
    expect(log.unstable).toHaveLength(3);
  });
});
