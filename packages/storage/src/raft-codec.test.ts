import { isParleyError, StorageCorruptError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { EntryColumns } from './arena.js';
import {
  decodeHardState,
  decodeOffset,
  decodeSnapshot,
  encodeEntry,
  encodeHardState,
  encodeOffset,
  encodeSnapshot,
  entryKey,
  entryKeyIndex,
  HARD_STATE_KEY,
  loadEntryInto,
  OFFSET_KEY,
  SNAPSHOT_KEY,
} from './raft-codec.js';
import { RECORD_HEADER_BYTES, sealRecord } from './record.js';

const H = RECORD_HEADER_BYTES;

/** A copy of `rec` with a float64 overwritten at `at` and the checksum recomputed (a record as a buggy writer leaves it). */
function withDouble(key: Buffer, rec: Buffer, at: number, value: number): Buffer {
  const copy = Buffer.from(rec);
  copy.writeDoubleLE(value, at);
  return sealRecord(key, copy);
}

function corrupt(fn: () => unknown): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(StorageCorruptError);
  expect(isParleyError(thrown, 'storage_corrupt')).toBe(true);
}

const NOT_POSITIONS = [Number.NaN, Number.POSITIVE_INFINITY, -1, 0.5, 2 ** 53, -0.5];

describe('raft log records', () => {
  it('round-trip entries, hard state, compaction point and snapshot', () => {
    const hs = { term: 7, commit: Number.MAX_SAFE_INTEGER, vote: 'n\u{1F600}' };
    expect(decodeHardState('t', encodeHardState(hs))).toEqual(hs);
    expect(decodeOffset('t', encodeOffset({ index: 9, term: 2 }))).toEqual({ index: 9, term: 2 });
    const snap = {
      meta: { index: 5, term: 3, confState: { voters: ['a', 'b'], learners: ['c'] } },
      data: Buffer.from('xyz'),
    };
    const back = decodeSnapshot('t', encodeSnapshot(snap));
    expect(back.meta).toEqual(snap.meta);
    expect([...back.data]).toEqual([...snap.data]);
  });

  it('refuse a term, commit or index that is not a safe non-negative integer, with a valid checksum', () => {
    const hs = encodeHardState({ term: 1, commit: 1, vote: 'a' });
    const off = encodeOffset({ index: 1, term: 1 });
    const snap = encodeSnapshot({
      meta: { index: 1, term: 1, confState: { voters: ['a'], learners: [] } },
      data: Buffer.alloc(0),
    });
    for (const bad of NOT_POSITIONS) {
      corrupt(() => decodeHardState('t', withDouble(HARD_STATE_KEY, hs, H, bad)));
      corrupt(() => decodeHardState('t', withDouble(HARD_STATE_KEY, hs, H + 8, bad)));
      corrupt(() => decodeOffset('t', withDouble(OFFSET_KEY, off, H, bad)));
      corrupt(() => decodeOffset('t', withDouble(OFFSET_KEY, off, H + 8, bad)));
      corrupt(() => decodeSnapshot('t', withDouble(SNAPSHOT_KEY, snap, H, bad)));
      corrupt(() => decodeSnapshot('t', withDouble(SNAPSHOT_KEY, snap, H + 8, bad)));
      const key = entryKey(3);
      const rec = withDouble(
        key,
        encodeEntry(key, { index: 3, term: 1, type: 'normal', data: Buffer.from('d') }),
        H,
        bad,
      );
      corrupt(() => loadEntryInto('t', key, rec, 3, new EntryColumns(4096)));
    }
  });

  it('refuse a vote or conf state that is not UTF-8 instead of reading it lossily', () => {
    const hs = Buffer.from(encodeHardState({ term: 1, commit: 1, vote: 'ab' }));
    hs[hs.length - 1] = 0xff;
    corrupt(() => decodeHardState('t', sealRecord(HARD_STATE_KEY, hs)));
    const snap = Buffer.from(
      encodeSnapshot({
        meta: { index: 1, term: 1, confState: { voters: ['ab'], learners: [] } },
        data: Buffer.alloc(0),
      }),
    );
    snap[snap.indexOf('ab') + 1] = 0xff; // inside the JSON string: lossy decoding made it 'a\ufffd'
    corrupt(() => decodeSnapshot('t', sealRecord(SNAPSHOT_KEY, snap)));
  });

  it('refuses an entry key whose index is past 2^53', () => {
    const key = Buffer.from([0x65, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    corrupt(() => entryKeyIndex('t', key));
    expect(entryKeyIndex('t', entryKey(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });
});
