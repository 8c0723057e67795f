/**
 * JSON values and their canonical text form.
 *
 * Canonical JSON is what the state machine hashes, measures and snapshots:
 * object keys sorted by UTF-16 code unit, no whitespace, numbers as
 * `JSON.stringify` prints them, properties whose value is `undefined` left out.
 * The same value always yields the same bytes on every replica.
 */
import { InvalidArgumentError, type JsonValue } from '@parley/interface';

/** A JSON value (defined once, in @parley/interface). */
export type { JsonValue };

/** Deepest nesting of arrays/objects a value may have (documented limit). */
export const MAX_JSON_DEPTH = 64;

/**
 * Canonical JSON text of `value`. Throws InvalidArgumentError for anything that
 * is not plain JSON (NaN, Infinity, functions, class instances, undefined in
 * arrays, depth beyond `maxDepth`, by default MAX_JSON_DEPTH).
 *
 * Object keys come out in JavaScript's enumeration order after inserting them
 * sorted by UTF-16 code unit: array-index keys ("0", "7", "10") first in
 * numeric order, then every other key in code-unit order. Every replica runs
 * the same rule, so the text is a pure function of the value.
 */
export function canonicalJson(value: unknown, maxDepth = MAX_JSON_DEPTH): string {
  return JSON.stringify(canonicalize(value, maxDepth));
}

/**
 * `value` itself when it already is canonical (plain JSON, keys in canonical
 * order), otherwise a copy whose objects are rebuilt in canonical key order.
 * Only the subtrees that need it are copied.
 */
export function canonicalize(value: unknown, maxDepth = MAX_JSON_DEPTH): JsonValue {
  return canon(value, 0, maxDepth) as JsonValue;
}

function isArrayIndexKey(key: string): boolean {
  const c0 = key.charCodeAt(0);
  if (!(c0 >= 48 && c0 <= 57)) return false;
  return /^(?:0|[1-9][0-9]{0,9})$/.test(key) && Number(key) < 4_294_967_295;
}

function canon(value: unknown, depth: number, maxDepth: number): unknown {
  if (value === null) return value;
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidArgumentError('JSON numbers must be finite');
      return value;
    case 'object':
      break;
    default:
      throw new InvalidArgumentError(`not a JSON value: ${typeof value}`);
  }
  if (depth >= maxDepth) throw new InvalidArgumentError(`JSON nesting deeper than ${maxDepth}`);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item === undefined) throw new InvalidArgumentError('JSON arrays cannot hold undefined');
      const c = canon(item, depth + 1, maxDepth);
      if (c !== item && copy === undefined) copy = value.slice(0, i);
      copy?.push(c);
    }
    return copy ?? value;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw new InvalidArgumentError('only plain objects are JSON');
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  let rebuild = false;
  let prev: string | undefined;
  let changed: unknown[] | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const item = obj[key];
    if (item === undefined) {
      rebuild = true;
      continue;
    }
    const c = canon(item, depth + 1, maxDepth);
    if (c !== item) {
      rebuild = true;
      changed ??= [];
      changed[i] = c;
    }
    if (!isArrayIndexKey(key)) {
      if (prev !== undefined && prev >= key) rebuild = true;
      prev = key;
    }
  }
  if (!rebuild && proto === Object.prototype) return value;
  const order = keys.map((key, i) => [key, i] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: Record<string, unknown> = {};
  for (const [key, i] of order) {
    const c = changed?.[i] ?? obj[key];
    // defineProperty, not assignment: `out.__proto__ = c` would set the prototype and drop the key.
    if (c !== undefined)
      Object.defineProperty(out, key, { value: c, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** Freezes a JSON value and everything inside it; returns it. */
export function deepFreeze<T extends JsonValue>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child as JsonValue);
  }
  return value;
}

/** Number of bytes `text` takes in UTF-8 (lone surrogates count as U+FFFD, 3 bytes). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Deep equality of two JSON values (object key order ignored). */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i] as JsonValue, b[i] as JsonValue)) return false;
    return true;
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k) || !jsonEqual(a[k] as JsonValue, b[k] as JsonValue)) return false;
  }
  return true;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function utf8Encode(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Strict UTF-8 decode; throws TypeError on malformed input (callers convert it). */
export function utf8Decode(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** base64url without padding. */
export function base64UrlEncode(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = ((bytes[i] as number) << 16) | ((bytes[i + 1] as number) << 8) | (bytes[i + 2] as number);
    out += B64[(n >>> 18) & 63]! + B64[(n >>> 12) & 63]! + B64[(n >>> 6) & 63]! + B64[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = (bytes[i] as number) << 16;
    out += B64[(n >>> 18) & 63]! + B64[(n >>> 12) & 63]!;
  } else if (rest === 2) {
    const n = ((bytes[i] as number) << 16) | ((bytes[i + 1] as number) << 8);
    out += B64[(n >>> 18) & 63]! + B64[(n >>> 12) & 63]! + B64[(n >>> 6) & 63]!;
  }
  return out;
}

/** Inverse of base64UrlEncode; returns undefined for anything malformed. */
export function base64UrlDecode(text: string): Uint8Array | undefined {
  if (text.length % 4 === 1) return undefined;
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const v = B64.indexOf(text[i] as string);
    if (v < 0) return undefined;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >>> bits) & 0xff;
    }
    acc &= (1 << bits) - 1;
  }
  return out.subarray(0, o);
}
