/**
 * Keys and checksummed records of the level Raft log.
 *
 * | key                         | record body                                            |
 * | --------------------------- | ------------------------------------------------------ |
 * | `e` + index (u64 BE)        | term f64 · type u8 (0 normal, 1 conf) · data           |
 * | `h`                         | term f64 · commit f64 · vote (UTF-8)                   |
 * | `o`                         | compaction point: index f64 · term f64                 |
 * | `s`                         | index f64 · term f64 · conf length u32 · conf JSON · data |
 *
 * Entry keys sort by index, so the log loads in order with one scan.
 */

import { isUtf8 } from 'node:buffer';
import {
  type ConfState,
  type HardState,
  type RaftEntry,
  type RaftSnapshot,
  StorageCorruptError,
} from '@parley/interface';
import type { EntryColumns } from './arena.js';
import { allocRecord, bytesView, openRecord, RECORD_HEADER_BYTES, sealRecord } from './record.js';

const H = RECORD_HEADER_BYTES;
export const ENTRY_PREFIX = 0x65; // 'e'
export const HARD_STATE_KEY = Buffer.from('h');
export const OFFSET_KEY = Buffer.from('o');
export const SNAPSHOT_KEY = Buffer.from('s');
export const ENTRY_RANGE = { gte: Buffer.from([ENTRY_PREFIX]), lt: Buffer.from([ENTRY_PREFIX + 1]) };

export function entryKey(index: number): Buffer {
  const k = Buffer.allocUnsafe(9);
  k[0] = ENTRY_PREFIX;
  k.writeUInt32BE(Math.floor(index / 0x1_0000_0000), 1);
  k.writeUInt32BE(index >>> 0, 5);
  return k;
}

export function entryKeyIndex(store: string, key: Buffer): number {
  if (key.length !== 9 || key[0] !== ENTRY_PREFIX) {
    throw new StorageCorruptError(store, `unexpected key ${key.toString('hex')} in the entry range`);
  }
  const index = key.readUInt32BE(1) * 0x1_0000_0000 + key.readUInt32BE(5);
  if (index > Number.MAX_SAFE_INTEGER)
    throw new StorageCorruptError(store, `entry key ${key.toString('hex')}: index past 2^53`);
  return index;
}

/**
 * A term, index or commit read back as a float64: only safe non-negative integers were ever written, so
 * anything else (NaN, ±Infinity, −1, ½, 2^60) is corruption, not a number to hand to Raft.
 */
function count(store: string, what: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new StorageCorruptError(store, `${what} ${value} is not a log position`);
  return value;
}

/** Strict UTF-8: a lossy decode would turn a corrupt vote or conf state into a different, plausible one. */
function utf8(store: string, what: string, rec: Buffer, start: number, end: number): string {
  if (!isUtf8(rec.subarray(start, end))) throw new StorageCorruptError(store, `${what} is not valid UTF-8`);
  return rec.toString('utf8', start, end);
}

function describeEntry(key: Uint8Array): string {
  const k = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  return k.length === 9 ? `entry ${k.readUInt32BE(1) * 0x1_0000_0000 + k.readUInt32BE(5)}` : 'entry';
}

export function encodeEntry(key: Buffer, e: RaftEntry): Buffer {
  const rec = allocRecord(9 + e.data.length);
  rec.writeDoubleLE(e.term, H);
  rec[H + 8] = e.type === 'conf' ? 1 : 0;
  rec.set(e.data, H + 9);
  return sealRecord(key, rec);
}

/** Checks an entry record and appends it to `columns` without creating an entry object. */
export function loadEntryInto(store: string, key: Buffer, value: Buffer, index: number, columns: EntryColumns): void {
  const rec = openRecord(store, key, value, describeEntry);
  if (rec.length < H + 9) throw new StorageCorruptError(store, `entry ${index}: record too short`);
  const t = rec[H + 8];
  if (t !== 0 && t !== 1) throw new StorageCorruptError(store, `entry ${index}: unknown type ${t}`);
  columns.push(
    count(store, `entry ${index}: term`, rec.readDoubleLE(H)),
    t === 1 ? 'conf' : 'normal',
    rec,
    H + 9,
    rec.length,
  );
}

export function encodeHardState(hs: HardState): Buffer {
  const vote = Buffer.from(hs.vote, 'utf8');
  const rec = allocRecord(16 + vote.length);
  rec.writeDoubleLE(hs.term, H);
  rec.writeDoubleLE(hs.commit, H + 8);
  rec.set(vote, H + 16);
  return sealRecord(HARD_STATE_KEY, rec);
}

export function decodeHardState(store: string, value: Buffer): HardState {
  const rec = openRecord(store, HARD_STATE_KEY, value, () => 'hard state');
  if (rec.length < H + 16) throw new StorageCorruptError(store, 'hard state: record too short');
  return {
    term: count(store, 'hard state: term', rec.readDoubleLE(H)),
    commit: count(store, 'hard state: commit', rec.readDoubleLE(H + 8)),
    vote: utf8(store, 'hard state: vote', rec, H + 16, rec.length),
  };
}

export function encodeOffset(point: { index: number; term: number }): Buffer {
  const rec = allocRecord(16);
  rec.writeDoubleLE(point.index, H);
  rec.writeDoubleLE(point.term, H + 8);
  return sealRecord(OFFSET_KEY, rec);
}

export function decodeOffset(store: string, value: Buffer): { index: number; term: number } {
  const rec = openRecord(store, OFFSET_KEY, value, () => 'compaction point');
  if (rec.length !== H + 16) throw new StorageCorruptError(store, 'compaction point: bad record length');
  return {
    index: count(store, 'compaction point: index', rec.readDoubleLE(H)),
    term: count(store, 'compaction point: term', rec.readDoubleLE(H + 8)),
  };
}

export function encodeSnapshot(s: RaftSnapshot): Buffer {
  const conf = Buffer.from(JSON.stringify({ v: s.meta.confState.voters, l: s.meta.confState.learners }), 'utf8');
  const rec = allocRecord(20 + conf.length + s.data.length);
  rec.writeDoubleLE(s.meta.index, H);
  rec.writeDoubleLE(s.meta.term, H + 8);
  rec.writeUInt32LE(conf.length, H + 16);
  rec.set(conf, H + 20);
  rec.set(s.data, H + 20 + conf.length);
  return sealRecord(SNAPSHOT_KEY, rec);
}

function isStringArray(x: unknown): x is string[] {
  return Array.isArray(x) && x.every((v) => typeof v === 'string');
}

export function decodeSnapshot(store: string, value: Buffer): RaftSnapshot {
  const rec = openRecord(store, SNAPSHOT_KEY, value, () => 'snapshot');
  if (rec.length < H + 20) throw new StorageCorruptError(store, 'snapshot: record too short');
  const confBytes = rec.readUInt32LE(H + 16);
  if (H + 20 + confBytes > rec.length) throw new StorageCorruptError(store, 'snapshot: conf state overruns record');
  let conf: unknown;
  try {
    conf = JSON.parse(utf8(store, 'snapshot: conf state', rec, H + 20, H + 20 + confBytes));
  } catch (err) {
    if (err instanceof StorageCorruptError) throw err;
    throw new StorageCorruptError(store, 'snapshot: conf state is not JSON');
  }
  const c = conf as { v?: unknown; l?: unknown };
  if (!isStringArray(c.v) || !isStringArray(c.l)) throw new StorageCorruptError(store, 'snapshot: bad conf state');
  const confState: ConfState = { voters: c.v, learners: c.l };
  return {
    meta: {
      index: count(store, 'snapshot: index', rec.readDoubleLE(H)),
      term: count(store, 'snapshot: term', rec.readDoubleLE(H + 8)),
      confState,
    },
    data: bytesView(rec, H + 20 + confBytes),
  };
}
