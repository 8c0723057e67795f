import { isParleyError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { MemoryRaftStorage } from './storage.js';

const e = (index: number, term: number, size = 4) => ({
  index,
  term,
  type: 'normal' as const,
  data: new Uint8Array(size),
});

describe('MemoryRaftStorage', () => {
  it('appends, truncates a conflicting suffix, and answers terms with typed errors', async () => {
    const s = new MemoryRaftStorage();
    await s.save({ entries: [e(1, 1), e(2, 1), e(3, 1)] });
    await s.save({ entries: [e(2, 2)] });
    expect(s.lastIndex()).toBe(2);
    expect(s.term(2)).toBe(2);
    expect(() => s.term(3)).toThrow(expect.objectContaining({ code: 'log_unavailable' }));
    await expect(s.save({ entries: [e(5, 2)] })).rejects.toThrow(/gap/);
  });

  it('snapshots, compacts, and keeps the compaction point term', async () => {
    const s = new MemoryRaftStorage();
    await s.save({ entries: [e(1, 1), e(2, 1), e(3, 2), e(4, 2)], hardState: { term: 2, vote: 'a', commit: 4 } });
    await s.createSnapshot(3, { voters: ['a'], learners: [] }, new Uint8Array([7]));
    await s.compact(3);
    expect([s.firstIndex(), s.lastIndex(), s.term(3)]).toEqual([4, 4, 2]);
    let err: unknown;
    try {
      s.entries(2, 4);
    } catch (x) {
      err = x;
    }
    expect(isParleyError(err, 'compacted')).toBe(true);
    const again = s.reopen();
    expect(again.initialState()).toEqual({
      hardState: { term: 2, vote: 'a', commit: 4 },
      confState: { voters: ['a'], learners: [] },
    });
  });

  it('limits entries by maxBytes but returns at least one', async () => {
    const s = new MemoryRaftStorage();
    await s.save({ entries: [e(1, 1, 100), e(2, 1, 100), e(3, 1, 100)] });
    expect(s.entries(1, 4, 1).length).toBe(1);
    expect(s.entries(1, 4, 260).length).toBe(2);
  });
});
