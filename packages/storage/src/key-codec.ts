/**
 * The byte encoding of string-array keys.
 *
 * Each element is its UTF-8 bytes with 0x00 written as 0x01 0x01 and 0x01 as
 * 0x01 0x02, followed by a 0x00 terminator. Byte order of encodings is then the
 * element-wise order of the arrays (each element by Unicode code point, a
 * shorter element before any longer one it prefixes, a shorter array before
 * any longer one it prefixes), and the keys that start with `prefix`
 * element-wise are exactly the encodings that start with `encodeKey(prefix)`:
 * `['a']` is a prefix of `['a', 'b']` but not of `['ab']`.
 */
import { isUtf8 } from 'node:buffer';
import { DecodeError, InvalidArgumentError, type StorageKey } from '@parley/interface';

/** Longest accepted key, in encoded bytes. */
export const MAX_KEY_BYTES = 64 * 1024;

function assertKey(key: StorageKey, allowEmpty: boolean): void {
  if (!Array.isArray(key)) throw new InvalidArgumentError('storage key must be an array of strings');
  if (!allowEmpty && key.length === 0) throw new InvalidArgumentError('storage key must have at least one element');
  for (const part of key) {
    if (typeof part !== 'string') throw new InvalidArgumentError('storage key elements must be strings', { key });
  }
}

/** True when `s` holds U+0000 or U+0001; throws on a lone surrogate (it has no UTF-8 form, so two keys would collide). */
function needsEscape(s: string): boolean {
  let found = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 2) found = true;
    else if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) {
        throw new InvalidArgumentError('storage key element holds a lone UTF-16 surrogate', { index: i });
      }
      i++;
    }
  }
  return found;
}

/** Encodes a key; `prefix` allows the empty array (the whole keyspace). */
export function encodeKey(key: StorageKey, prefix = false): Buffer {
  assertKey(key, prefix);
  let size = 0;
  for (const part of key) size += Buffer.byteLength(part, 'utf8') * 2 + 1;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const part of key) {
    if (!needsEscape(part)) {
      at += out.write(part, at, 'utf8');
    } else {
      const raw = Buffer.from(part, 'utf8');
      for (const b of raw) {
        if (b < 2) {
          out[at++] = 1;
          out[at++] = b + 1;
        } else {
          out[at++] = b;
        }
      }
    }
    out[at++] = 0;
  }
  if (at > MAX_KEY_BYTES) throw new InvalidArgumentError(`storage key of ${at} bytes exceeds ${MAX_KEY_BYTES}`);
  return out.subarray(0, at);
}

/** The exclusive upper bound of the keys starting with `encodedPrefix` (non-empty, 0x00-terminated). */
export function prefixUpperBound(encodedPrefix: Uint8Array): Buffer {
  const end = Buffer.from(encodedPrefix);
  end[end.length - 1] = 1;
  return end;
}

/**
 * Decodes an encoded key; throws DecodeError on bytes no key encodes to: an empty or over-long key, a bad
 * escape, an unterminated element, or bytes that are not UTF-8 (a lossy decode would map two stored keys to
 * one, and the decoded key would not lead back to its record).
 */
export function decodeKey(bytes: Uint8Array): string[] {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  checkEncodedKey(buf);
  const parts: string[] = [];
  decodeElements(buf, 0, parts, undefined);
  return parts;
}

/** The checks on a whole encoded key; escapes and terminators are ASCII, so UTF-8 is checked once for all elements. */
function checkEncodedKey(buf: Buffer): void {
  if (buf.length === 0) throw new DecodeError('empty storage key', 0);
  if (buf.length > MAX_KEY_BYTES)
    throw new DecodeError(`storage key of ${buf.length} bytes exceeds ${MAX_KEY_BYTES}`, 0);
  if (!isUtf8(buf)) throw new DecodeError('storage key is not valid UTF-8', 0);
}

/** Decodes the elements of `buf` from `start` on into `parts`, and their terminator positions into `ends`. */
function decodeElements(buf: Buffer, start: number, parts: string[], ends: number[] | undefined): void {
  let escaped = false;
  for (let i = start; i < buf.length; i++) {
    const b = buf[i]!;
    if (b === 0) {
      parts.push(escaped ? unescapePart(buf, start, i) : buf.toString('utf8', start, i));
      ends?.push(i);
      start = i + 1;
      escaped = false;
    } else if (b === 1) {
      const next = buf[i + 1];
      if (next !== 1 && next !== 2) throw new DecodeError('bad escape in storage key', i);
      escaped = true;
      i++;
    }
  }
  if (start !== buf.length) throw new DecodeError('unterminated storage key element', start);
}

function unescapePart(buf: Buffer, start: number, end: number): string {
  const out = Buffer.allocUnsafe(end - start);
  let at = 0;
  for (let i = start; i < end; i++) {
    const b = buf[i]!;
    if (b === 1) {
      out[at++] = buf[++i]! - 1;
    } else {
      out[at++] = b;
    }
  }
  return out.toString('utf8', 0, at);
}

/** Element-wise order of keys, each element by code point: the order `loadRange` returns. */
export function compareKeys(a: StorageKey, b: StorageKey): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareCodePoints(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/**
 * Decodes a run of keys in order, sharing the strings of leading elements a key has in common with the one
 * before it (keys from a range scan mostly do), so a million keys under `['crdt', ns]` hold two strings for
 * those elements, not two million.
 */
export class KeyRunDecoder {
  private prev: Buffer = Buffer.alloc(0);
  private prevParts: string[] = [];
  /** End (terminator position) of each element of `prev`. */
  private prevEnds: number[] = [];

  decode(buf: Buffer): string[] {
    checkEncodedKey(buf);
    const parts: string[] = [];
    const ends: number[] = [];
    let start = 0;
    // Reuse elements while they are byte-for-byte those of the previous key (a JS loop: elements are short,
    // and a native compare costs more in argument checks than it saves).
    const prev = this.prev;
    reuse: for (let j = 0; j < this.prevEnds.length; j++) {
      const end = this.prevEnds[j]!;
      if (end >= buf.length || buf[end] !== 0) break;
      for (let i = start; i < end; i++) if (buf[i] !== prev[i]) break reuse;
      parts.push(this.prevParts[j]!);
      ends.push(end);
      start = end + 1;
    }
    decodeElements(buf, start, parts, ends);
    this.prev = buf;
    this.prevParts = parts;
    this.prevEnds = ends;
    return parts.slice();
  }
}
