/**
 * Mutations of valid encodings. Byte-level ones (bit flips, inserts, deletes,
 * duplication, truncation, splices of two encodings) and structure-aware ones:
 * varints rewritten to their extremes or nudged by one, fixed-width length
 * fields and doubles overwritten, length-prefixed fields replaced with new
 * content under a matching length, and JSON text mutated (see json-mutate.ts).
 */
import type { Gen } from './gen.js';
import { mutateJsonText } from './json-mutate.js';

export interface MutationInput {
  /** The encoding to mutate. */
  bytes: Uint8Array;
  /** A second valid encoding of the same decoder, for splices. */
  other: Uint8Array;
  /** Where JSON text starts, when the whole rest of the input is JSON (coord). */
  jsonStart?: number | undefined;
}

const INTERESTING_BYTES = [0x00, 0x01, 0x02, 0x7f, 0x80, 0x81, 0xc0, 0xed, 0xef, 0xf4, 0xfe, 0xff];

/** LEB128 encodings at the edges of ByteReader's varint (≤ 8 bytes, ≤ 2^53 − 1, canonical). */
const EXTREME_VARINTS: readonly number[][] = [
  [0x00],
  [0x01],
  [0x7f],
  [0x80, 0x01],
  [0xff, 0x7f],
  [0x80, 0x00], // non-canonical zero
  [0x81, 0x80, 0x00], // non-canonical with a trailing zero byte
  [0xff, 0xff, 0xff, 0xff, 0x0f], // 2^32 − 1
  [0x80, 0x80, 0x80, 0x80, 0x10], // 2^32
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], // 2^53 − 1
  [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10], // 2^53
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // 2^56 − 1
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // nine bytes
  [0x80, 0x80, 0x80], // unterminated
];

const INVALID_UTF8: readonly number[][] = [
  [0xc3, 0x28],
  [0xa0, 0xa1],
  [0xe2, 0x28, 0xa1],
  [0xed, 0xa0, 0x80], // an encoded surrogate
  [0xf0, 0x90, 0x28, 0xbc],
  [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
  [0xc0, 0xaf], // overlong '/'
  [0xef, 0xbb, 0xbf], // a BOM (valid, but decoders may strip it)
  [0xff],
];

const SPECIAL_DOUBLES = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, -1, 0.5, 2 ** 53, 2 ** 64];

function concat(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function encodeVarint(v: number): number[] {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** A canonical varint at `at`: its value and byte length, or undefined. */
export function readVarint(b: Uint8Array, at: number): { value: number; length: number } | undefined {
  let v = 0;
  let scale = 1;
  for (let i = 0; i < 8 && at + i < b.length; i++) {
    const x = b[at + i] as number;
    v += (x & 0x7f) * scale;
    if ((x & 0x80) === 0) {
      if (x === 0 && i > 0) return undefined;
      return v > Number.MAX_SAFE_INTEGER ? undefined : { value: v, length: i + 1 };
    }
    scale *= 0x80;
  }
  return undefined;
}

/** Replaces `b[at, at + removed)` with `insert`. */
function replace(b: Uint8Array, at: number, removed: number, insert: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(b.length - removed + insert.length);
  out.set(b.subarray(0, at), 0);
  out.set(insert, at);
  out.set(b.subarray(at + removed), at + insert.length);
  return out;
}

interface Field {
  at: number;
  headerBytes: number;
  length: number;
}

/**
 * A field `varint L | L bytes` found at a random place, or undefined. Fields whose content parses as JSON
 * (register values, conf states) are preferred, then fields that start like text, then any.
 */
function findLengthPrefixed(b: Uint8Array, g: Gen): Field | undefined {
  let text: Field | undefined;
  let any: Field | undefined;
  for (let tries = 0; tries < 64; tries++) {
    const at = g.int(b.length);
    const v = readVarint(b, at);
    if (v === undefined || v.value === 0) continue;
    if (at + v.length + v.value > b.length) continue;
    const field = { at, headerBytes: v.length, length: v.value };
    const first = b[at + v.length] as number;
    if (
      v.value <= 65_536 &&
      JSON_START.includes(first) &&
      looksLikeJson(b.subarray(at + v.length, at + v.length + v.value)) !== undefined
    ) {
      return field;
    }
    if ((first >= 0x20 && first < 0x7f) || (first >= 0xc2 && first <= 0xf4)) text ??= field;
    else any ??= field;
  }
  return text ?? any;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

const JSON_START = [...'[{"-0123456789tfn'].map((c) => c.charCodeAt(0));

function looksLikeJson(content: Uint8Array): string | undefined {
  const c = content[0];
  if (c === undefined || !JSON_START.includes(c)) return undefined;
  try {
    const text = decoder.decode(content);
    JSON.parse(text);
    return text;
  } catch {
    return undefined;
  }
}

/** New content for a length-prefixed field. */
function newFieldContent(content: Uint8Array, g: Gen): Uint8Array {
  const json = looksLikeJson(content);
  if (json !== undefined && g.bool(0.7)) return encoder.encode(mutateJsonText(json, g));
  switch (g.int(6)) {
    case 0:
      return new Uint8Array(0);
    case 1:
      return Uint8Array.from(g.pick(INVALID_UTF8));
    case 2: {
      const copy = content.slice();
      const bad = g.pick(INVALID_UTF8);
      const at = g.int(copy.length);
      return replace(copy, at, Math.min(bad.length, copy.length - at), bad);
    }
    case 3: {
      const times = g.pick([2, 16, 256, 4096]);
      const piece = content.length > 256 ? content.subarray(0, 256) : content;
      const out = new Uint8Array(piece.length * times);
      for (let i = 0; i < times; i++) out.set(piece, i * piece.length);
      return out;
    }
    case 4:
      return g.bytes(g.size(1024));
    default:
      return content.subarray(0, g.int(content.length));
  }
}

type Mutator = (m: MutationInput, g: Gen) => Uint8Array;

const MUTATORS: readonly Mutator[] = [
  // bit flips
  ({ bytes }, g) => {
    if (bytes.length === 0) return Uint8Array.of(g.int(256));
    const out = bytes.slice();
    const flips = g.pick([1, 1, 1, 2, 4, 8]);
    for (let i = 0; i < flips; i++) {
      const at = g.int(out.length);
      out[at] = (out[at] as number) ^ (1 << g.int(8));
    }
    return out;
  },
  // an interesting or random byte
  ({ bytes }, g) => {
    if (bytes.length === 0) return Uint8Array.of(g.pick(INTERESTING_BYTES));
    const out = bytes.slice();
    out[g.int(out.length)] = g.bool(0.5) ? g.pick(INTERESTING_BYTES) : g.int(256);
    return out;
  },
  // insert bytes
  ({ bytes }, g) => replace(bytes, g.int(bytes.length + 1), 0, g.bytes(g.pick([1, 1, 2, 4, 16, 64]))),
  // delete a range
  ({ bytes }, g) => {
    if (bytes.length === 0) return bytes;
    const at = g.int(bytes.length);
    const n = 1 + g.int(Math.min(bytes.length - at, g.pick([1, 4, 64, bytes.length])));
    return replace(bytes, at, n, []);
  },
  // duplicate a range, possibly many times
  ({ bytes }, g) => {
    if (bytes.length === 0) return bytes;
    const at = g.int(bytes.length);
    const n = 1 + g.int(Math.min(bytes.length - at, 64));
    const times = g.pick([1, 1, 2, 8, 100]);
    const piece = bytes.subarray(at, at + n);
    const run = new Uint8Array(n * times);
    for (let i = 0; i < times; i++) run.set(piece, i * n);
    return replace(bytes, g.int(bytes.length + 1), 0, run);
  },
  // truncate
  ({ bytes }, g) => bytes.subarray(0, g.int(bytes.length + 1)),
  // extend: random tail, or the input doubled
  ({ bytes }, g) => (g.bool(0.5) ? concat(bytes, g.bytes(1 + g.int(16))) : concat(bytes, bytes)),
  // splice: a prefix of one encoding, a suffix of the other
  ({ bytes, other }, g) => concat(bytes.subarray(0, g.int(bytes.length + 1)), other.subarray(g.int(other.length + 1))),
  // insert a piece of the other encoding
  ({ bytes, other }, g) => {
    const from = g.int(other.length + 1);
    const piece = other.subarray(from, from + 1 + g.int(64));
    return replace(bytes, g.int(bytes.length + 1), 0, piece);
  },
  // an extreme varint in place of 0..3 bytes
  ({ bytes }, g) => {
    const at = g.int(bytes.length + 1);
    return replace(bytes, at, Math.min(g.int(4), bytes.length - at), g.pick(EXTREME_VARINTS));
  },
  // a varint nudged: ±1, ±2, doubled, halved, zeroed or maxed (its length may change)
  ({ bytes }, g) => {
    for (let tries = 0; tries < 16 && bytes.length > 0; tries++) {
      const at = g.int(bytes.length);
      const v = readVarint(bytes, at);
      if (v === undefined) continue;
      const next = g.pick([
        v.value + 1,
        v.value - 1,
        v.value + 2,
        v.value - 2,
        v.value * 2,
        Math.floor(v.value / 2),
        0,
        v.value + 1000,
        Number.MAX_SAFE_INTEGER,
        0xffff_ffff,
      ]);
      if (next < 0 || next > Number.MAX_SAFE_INTEGER) continue;
      return replace(bytes, at, v.length, encodeVarint(next));
    }
    return bytes;
  },
  // a fixed-width integer overwritten (u16/u32, either byte order): lengths of net frames and storage records
  ({ bytes }, g) => {
    const width = g.pick([2, 4]);
    if (bytes.length < width) return bytes;
    const out = bytes.slice();
    const at = g.int(out.length - width + 1);
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    const little = g.bool(0.5);
    const max = width === 2 ? 0xffff : 0xffff_ffff;
    const old = width === 2 ? view.getUint16(at, little) : view.getUint32(at, little);
    const value = g.pick([0, 1, max, max - 1, out.length - at, out.length - at - width, old + 1, Math.max(0, old - 1)]);
    if (width === 2) view.setUint16(at, value & max, little);
    else view.setUint32(at, value >>> 0, little);
    return out;
  },
  // a float64 overwritten with NaN, ±Infinity, −0, −1, ½, 2^53, 2^64 (terms and indexes of storage records)
  ({ bytes }, g) => {
    if (bytes.length < 8) return bytes;
    const out = bytes.slice();
    const at = g.int(out.length - 7);
    new DataView(out.buffer, out.byteOffset, out.byteLength).setFloat64(at, g.pick(SPECIAL_DOUBLES), g.bool(0.8));
    return out;
  },
  // a length-prefixed field given new content under a matching length
  ({ bytes }, g) => {
    const f = findLengthPrefixed(bytes, g);
    if (f === undefined) return bytes;
    const start = f.at + f.headerBytes;
    const content = newFieldContent(bytes.subarray(start, start + f.length), g);
    return replace(
      bytes,
      f.at,
      f.headerBytes + f.length,
      concat(Uint8Array.from(encodeVarint(content.length)), content),
    );
  },
];

/** Structure-aware mutators get more turns than blind ones. */
const WEIGHTED: readonly Mutator[] = [
  ...MUTATORS,
  MUTATORS[9] as Mutator, // extreme varint
  MUTATORS[10] as Mutator, // nudged varint
  MUTATORS[10] as Mutator,
  MUTATORS[13] as Mutator, // length-prefixed field
  MUTATORS[13] as Mutator,
  MUTATORS[13] as Mutator,
];

/** The JSON-body mutator: only for inputs that end in JSON text. */
function mutateJsonBody(m: MutationInput, g: Gen): Uint8Array {
  const start = m.jsonStart as number;
  let text: string;
  try {
    text = decoder.decode(m.bytes.subarray(start));
  } catch {
    return m.bytes;
  }
  return concat(m.bytes.subarray(0, start), encoder.encode(mutateJsonText(text, g)));
}

/** One to three mutations stacked. */
export function mutate(m: MutationInput, g: Gen): Uint8Array {
  let bytes = m.bytes;
  const rounds = g.pick([1, 1, 1, 2, 3]);
  for (let i = 0; i < rounds; i++) {
    const useJson = m.jsonStart !== undefined && bytes.length >= m.jsonStart && g.bool(0.4);
    const step = useJson ? mutateJsonBody : g.pick(WEIGHTED);
    bytes = step({ ...m, bytes }, g);
  }
  return bytes;
}
