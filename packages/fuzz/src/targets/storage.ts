/**
 * @parley/storage: encoded keys (key-codec.ts: decodeKey, KeyRunDecoder),
 * checksummed KV records (record.ts) and the level Raft log's records
 * (raft-codec.ts: entries with their keys, hard state, compaction point,
 * snapshot).
 *
 * Records carry a CRC-32C over key and body, so a random mutation almost
 * always stops at the checksum. `repair` recomputes it on most mutated inputs
 * (as a buggy writer or a crafted file would), so the body parsers are reached.
 */
import { DecodeError, type HardState, type RaftEntry, type RaftSnapshot, type StorageKey } from '@parley/interface';
import {
  allocRecord,
  bytesView,
  decodeHardState,
  decodeKey,
  decodeOffset,
  decodeSnapshot,
  EntryColumns,
  encodeEntry,
  encodeHardState,
  encodeKey,
  encodeOffset,
  encodeSnapshot,
  entryKey,
  entryKeyIndex,
  HARD_STATE_KEY,
  KeyRunDecoder,
  loadEntryInto,
  OFFSET_KEY,
  openRecord,
  RECORD_HEADER_BYTES,
  SNAPSHOT_KEY,
  sealRecord,
} from '@parley/storage/codec';
import type { Gen } from '../gen.js';
import { InvariantError, type Target } from '../target.js';

const STORE = 'fuzz';

function buf(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Recomputes a record's checksum over `key` and the record's body (when it has a header at all). */
function reseal(key: Uint8Array, rec: Uint8Array): Uint8Array {
  if (rec.length < RECORD_HEADER_BYTES) return rec;
  return sealRecord(key, Buffer.from(rec));
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

// ---------------------------------------------------------------- keys

function storageKey(g: Gen): StorageKey {
  const n = 1 + g.size(12);
  const key: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = g.rng.float();
    key.push(r < 0.3 ? g.pick(['crdt', 'raft', 'ns', 'jobs', '']) : r < 0.95 ? g.string(32) : g.string(20_000));
  }
  return key;
}

/** A run of keys as a range scan returns them: `u32 length | key` repeated (this target's own framing). */
function frameKeys(keys: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(keys.reduce((n, k) => n + 4 + k.length, 0));
  const view = new DataView(out.buffer);
  let at = 0;
  for (const k of keys) {
    view.setUint32(at, k.length);
    out.set(k, at + 4);
    at += 4 + k.length;
  }
  return out;
}

function unframeKeys(bytes: Uint8Array): Buffer[] {
  const out: Buffer[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at < bytes.length; ) {
    if (at + 4 > bytes.length) throw new DecodeError('truncated key length', at);
    const n = view.getUint32(at);
    if (at + 4 + n > bytes.length) throw new DecodeError('truncated key', at);
    out.push(buf(bytes.subarray(at + 4, at + 4 + n)));
    at += 4 + n;
  }
  return out;
}

/** Decodes a run with KeyRunDecoder and checks each key against decodeKey: they must agree. */
function decodeRun(bytes: Uint8Array): string[][] {
  const run = new KeyRunDecoder();
  const out: string[][] = [];
  for (const k of unframeKeys(bytes)) {
    let alone: string[] | DecodeError;
    try {
      alone = decodeKey(k);
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
      alone = err;
    }
    let inRun: string[] | undefined;
    try {
      inRun = run.decode(k);
    } catch (err) {
      if (!(alone instanceof DecodeError)) {
        if (err instanceof DecodeError) throw new InvariantError('KeyRunDecoder rejects a key decodeKey accepts');
        throw err;
      }
      throw err;
    }
    if (alone instanceof DecodeError) throw new InvariantError('KeyRunDecoder accepts a key decodeKey rejects');
    if (alone.length !== inRun.length || alone.some((p, i) => p !== inRun[i])) {
      throw new InvariantError('KeyRunDecoder and decodeKey disagree');
    }
    out.push(inRun);
  }
  return out;
}

// ---------------------------------------------------------------- Raft log records

function term(g: Gen): number {
  return g.bool(0.8) ? g.int(1000) : g.uint();
}

/** An entry record stored under its key: `key (9 bytes) | record`. */
interface StoredEntry {
  entry: RaftEntry;
}

function encodeStoredEntry({ entry }: StoredEntry): Uint8Array {
  const key = entryKey(entry.index);
  const rec = encodeEntry(key, entry);
  const out = new Uint8Array(key.length + rec.length);
  out.set(key, 0);
  out.set(rec, key.length);
  return out;
}

function decodeStoredEntry(bytes: Uint8Array): StoredEntry {
  const key = buf(bytes.subarray(0, Math.min(9, bytes.length)));
  const index = entryKeyIndex(STORE, key);
  const columns = new EntryColumns(4096);
  loadEntryInto(STORE, key, buf(bytes.subarray(9)), index, columns);
  return { entry: columns.entry(0, index) };
}

function confState(g: Gen): { voters: string[]; learners: string[] } {
  const id = () => (g.bool(0.8) ? `n${g.int(9)}` : g.string(40));
  return { voters: Array.from({ length: g.size(9) }, id), learners: Array.from({ length: g.size(9) }, id) };
}

export const storageTargets: Target[] = [
  {
    name: 'storage.decodeKey',
    codes: ['decode_error'],
    generate: storageKey,
    encode: (k: StorageKey) => encodeKey(k),
    decode: (b: Uint8Array) => decodeKey(b),
    valid: (k: string[]) => (k.length === 0 ? 'a key has at least one element' : undefined),
    canonical: true,
  } satisfies Target<StorageKey>,
  {
    name: 'storage.KeyRunDecoder',
    codes: ['decode_error'],
    generate: (g: Gen) => {
      const keys = Array.from({ length: 1 + g.size(32) }, () => storageKey(g));
      // A range scan returns keys in order, so neighbours share leading elements.
      return keys
        .map((k) => ({ k, e: encodeKey(k) }))
        .sort((a, b) => Buffer.compare(a.e, b.e))
        .map((x) => x.k);
    },
    encode: (keys: StorageKey[]) => frameKeys(keys.map((k) => encodeKey(k))),
    decode: decodeRun,
    canonical: true,
  } satisfies Target<StorageKey[]>,
  {
    name: 'storage.openRecord',
    codes: ['storage_corrupt', 'decode_error'],
    // `u16 key length | key | record`: a KV record under its encoded key.
    generate: (g: Gen) => ({
      key: new Uint8Array(encodeKey(storageKey(g))),
      data: g.bool(0.002) ? g.bytes(g.int(1 << 20)) : g.blob(2048),
    }),
    encode: ({ key, data }: { key: Uint8Array; data: Uint8Array }) => {
      if (key.length > 0xffff) throw new InvariantError('key too long for this framing');
      const rec = allocRecord(data.length);
      rec.set(data, RECORD_HEADER_BYTES);
      sealRecord(key, rec);
      const out = new Uint8Array(2 + key.length + rec.length);
      new DataView(out.buffer).setUint16(0, key.length);
      out.set(key, 2);
      out.set(rec, 2 + key.length);
      return out;
    },
    decode: (b: Uint8Array) => {
      if (b.length < 2) throw new DecodeError('truncated key length', 0);
      const n = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint16(0);
      if (2 + n > b.length) throw new DecodeError('truncated key', 2);
      const key = b.slice(2, 2 + n);
      const rec = openRecord(STORE, key, b.subarray(2 + n), () => 'record');
      return { key, data: bytesView(rec, RECORD_HEADER_BYTES) };
    },
    repair: (b: Uint8Array) => {
      if (b.length < 2) return b;
      const n = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint16(0);
      if (2 + n > b.length) return b;
      const rec = reseal(b.subarray(2, 2 + n), b.subarray(2 + n));
      const out = new Uint8Array(2 + n + rec.length);
      out.set(b.subarray(0, 2 + n), 0);
      out.set(rec, 2 + n);
      return out;
    },
  } satisfies Target<{ key: Uint8Array; data: Uint8Array }>,
  {
    name: 'storage.loadEntryInto',
    codes: ['storage_corrupt'],
    generate: (g: Gen): StoredEntry => ({
      entry: {
        index: g.uint(),
        term: term(g),
        type: g.bool(0.1) ? 'conf' : 'normal',
        data: g.bool(0.002) ? g.bytes(g.int(1 << 20)) : g.blob(2048),
      },
    }),
    encode: encodeStoredEntry,
    decode: decodeStoredEntry,
    valid: ({ entry }: StoredEntry) =>
      isCount(entry.term) && isCount(entry.index) ? undefined : 'term and index must be safe non-negative integers',
    repair: (b: Uint8Array) => {
      if (b.length < 9) return b;
      const rec = reseal(b.subarray(0, 9), b.subarray(9));
      const out = new Uint8Array(9 + rec.length);
      out.set(b.subarray(0, 9), 0);
      out.set(rec, 9);
      return out;
    },
  } satisfies Target<StoredEntry>,
  {
    name: 'storage.decodeHardState',
    codes: ['storage_corrupt'],
    generate: (g: Gen): HardState => ({ term: term(g), commit: g.uint(), vote: g.bool(0.3) ? '' : g.string(64) }),
    encode: (hs: HardState) => encodeHardState(hs),
    decode: (b: Uint8Array) => decodeHardState(STORE, buf(b)),
    valid: (hs: HardState) =>
      isCount(hs.term) && isCount(hs.commit) ? undefined : 'term and commit must be safe non-negative integers',
    repair: (b: Uint8Array) => reseal(HARD_STATE_KEY, b),
  } satisfies Target<HardState>,
  {
    name: 'storage.decodeOffset',
    codes: ['storage_corrupt'],
    generate: (g: Gen) => ({ index: g.uint(), term: term(g) }),
    encode: (o: { index: number; term: number }) => encodeOffset(o),
    decode: (b: Uint8Array) => decodeOffset(STORE, buf(b)),
    valid: (o: { index: number; term: number }) =>
      isCount(o.index) && isCount(o.term) ? undefined : 'index and term must be safe non-negative integers',
    repair: (b: Uint8Array) => reseal(OFFSET_KEY, b),
  } satisfies Target<{ index: number; term: number }>,
  {
    name: 'storage.decodeSnapshot',
    codes: ['storage_corrupt'],
    generate: (g: Gen): RaftSnapshot => ({
      meta: { index: g.uint(), term: term(g), confState: confState(g) },
      data: g.bool(0.002) ? g.bytes(g.int(1 << 20)) : g.blob(4096),
    }),
    encode: (s: RaftSnapshot) => encodeSnapshot(s),
    decode: (b: Uint8Array) => decodeSnapshot(STORE, buf(b)),
    valid: (s: RaftSnapshot) =>
      isCount(s.meta.index) && isCount(s.meta.term) ? undefined : 'index and term must be safe non-negative integers',
    repair: (b: Uint8Array) => reseal(SNAPSHOT_KEY, b),
  } satisfies Target<RaftSnapshot>,
];
