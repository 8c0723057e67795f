/**
 * Entries with a payload of any size on a strong namespace. A payload is an
 * opaque string; one that fits in `chunkBytes` (as JSON) lives inline in its
 * entry, a larger one is cut into chunks written first, under keys unique to
 * the entry and the payload's hash, and the entry written last names them
 * with that hash. A reader that finds the entry therefore finds all of its
 * chunks, and checks their concatenation against the hash: it never sees half
 * a payload. Replaced chunk sets are deleted after the entry moved on; a
 * reader caught in between reads the entry again.
 */
import { InvalidArgumentError, isParleyError, StorageCorruptError } from '@parley/interface';
import type { FenceToken, JsonValue, StrongEntry, StrongNamespace } from '@parley/node';
import { sha256Hex } from './keys.js';

export interface ChunkRef {
  /** sha256 of the whole payload. */
  h: string;
  /** Number of chunks. */
  n: number;
  /** Payload length in UTF-16 code units. */
  len: number;
}

export interface WriteContext {
  ns: StrongNamespace;
  /** Seconds. */
  ttl: number;
  /** Largest inline payload and largest chunk, as UTF-8 bytes of its JSON string. */
  chunkBytes: number;
  fence?: FenceToken;
}

/** Bytes `s[i]` costs inside a JSON string, at most (surrogates counted as escaped, lone or not). */
function unitCost(c: number): number {
  if (c < 0x20) return 6;
  if (c === 0x22 || c === 0x5c) return 2;
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdfff) return 6;
  return 3;
}

/** Cuts `text` into pieces whose JSON-encoded size is at most `budget` bytes, never inside a surrogate pair. */
export function splitPayload(text: string, budget: number): string[] {
  if (!Number.isSafeInteger(budget) || budget < 16) throw new InvalidArgumentError('chunkBytes must be at least 16');
  const pieces: string[] = [];
  let start = 0;
  let cost = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const u = unitCost(c);
    if (cost + u > budget) {
      let end = i;
      // Keep a high surrogate with its low half.
      if (end > start && c >= 0xdc00 && c <= 0xdfff) end--;
      if (end === start) end = i; // cannot happen with budget ≥ 16, but never loop forever
      pieces.push(text.slice(start, end));
      start = end;
      cost = 2;
      for (let j = start; j <= i; j++) cost += unitCost(text.charCodeAt(j));
      continue;
    }
    cost += u;
  }
  pieces.push(text.slice(start));
  return pieces;
}

function encodedCost(text: string, budget: number): number {
  let cost = 2;
  for (let i = 0; i < text.length && cost <= budget; i++) cost += unitCost(text.charCodeAt(i));
  return cost;
}

function chunkKey(entryKey: string, hash: string, i: number): string {
  return `x:${sha256Hex(`${entryKey}:${hash}`).slice(0, 40)}:${i}`;
}

export function chunkRefOf(value: JsonValue | undefined): ChunkRef | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const px = (value as Record<string, JsonValue>).px;
  if (px === null || typeof px !== 'object' || Array.isArray(px)) return undefined;
  const { h, n, len } = px as Record<string, JsonValue>;
  if (typeof h !== 'string' || typeof n !== 'number' || typeof len !== 'number') return undefined;
  return { h, n, len };
}

function chunkKeys(entryKey: string, ref: ChunkRef): string[] {
  return Array.from({ length: ref.n }, (_, i) => chunkKey(entryKey, ref.h, i));
}

export interface WriteEntryOptions {
  ifVersion?: string;
  ifNotExists?: boolean;
  /** The entry this write replaces, if known: its chunks are deleted once the new entry is written. */
  previous?: StrongEntry;
}

/** Writes `fields` plus the payload at `key`: inline, or chunks first and the entry last. */
export async function writeEntry(
  w: WriteContext,
  key: string,
  fields: Record<string, JsonValue>,
  text: string,
  options: WriteEntryOptions = {},
): Promise<StrongEntry> {
  const base = { ttl: w.ttl, ...(w.fence ? { fence: w.fence } : {}) };
  const cond = {
    ...(options.ifVersion !== undefined ? { ifVersion: options.ifVersion } : {}),
    ...(options.ifNotExists ? { ifNotExists: true } : {}),
  };
  let value: Record<string, JsonValue>;
  if (encodedCost(text, w.chunkBytes) <= w.chunkBytes) {
    value = { ...fields, p: text };
  } else {
    const ref: ChunkRef = { h: sha256Hex(text), n: 0, len: text.length };
    const pieces = splitPayload(text, w.chunkBytes - 16);
    ref.n = pieces.length;
    // Chunks outlive their entry by a minute, so an entry never outlives its chunks.
    const chunkTtl = { ...base, ttl: w.ttl + 60 };
    await Promise.all(pieces.map((d, i) => w.ns.set(chunkKey(key, ref.h, i), { k: 'x', d }, chunkTtl)));
    value = { ...fields, px: { ...ref } };
  }
  const entry = await w.ns.set(key, value, { ...base, ...cond });
  const old = chunkRefOf(options.previous?.value);
  if (old && old.h !== chunkRefOf(entry.value)?.h) await deleteChunks(w, key, old);
  return entry;
}

async function deleteChunks(w: WriteContext, key: string, ref: ChunkRef): Promise<void> {
  const fence = w.fence ? { fence: w.fence } : {};
  await Promise.all(chunkKeys(key, ref).map((k) => w.ns.delete(k, fence).catch(() => false)));
}

/** Deletes an entry and its chunks. */
export async function deleteEntry(w: WriteContext, entry: StrongEntry): Promise<void> {
  await w.ns.delete(entry.key, w.fence ? { fence: w.fence } : {});
  const ref = chunkRefOf(entry.value);
  if (ref) await deleteChunks(w, entry.key, ref);
}

/** The payload of `entry`, or undefined if a chunk is gone (the entry was replaced or deleted meanwhile). */
export async function readPayload(ns: StrongNamespace, entry: StrongEntry): Promise<string | undefined> {
  const v = entry.value as Record<string, JsonValue> | null;
  if (v !== null && typeof v === 'object' && typeof v.p === 'string') return v.p;
  const ref = chunkRefOf(entry.value);
  if (!ref) throw new StorageCorruptError(ns.name, `entry '${entry.key}' has no payload`);
  const chunks = await Promise.all(chunkKeys(entry.key, ref).map((k) => ns.get(k)));
  const parts: string[] = [];
  for (const c of chunks) {
    const d = (c?.value as Record<string, JsonValue> | undefined)?.d;
    if (typeof d !== 'string') return undefined;
    parts.push(d);
  }
  const text = parts.join('');
  if (text.length !== ref.len || sha256Hex(text) !== ref.h) return undefined;
  return text;
}

/**
 * Reads the entry at `key` and its payload, again if its chunks changed under
 * it (bounded). Undefined if the entry is absent.
 */
export async function readEntry(
  ns: StrongNamespace,
  key: string,
  found?: StrongEntry,
): Promise<{ entry: StrongEntry; text: string } | undefined> {
  let entry = found ?? (await ns.get(key));
  for (let attempt = 0; attempt < 4 && entry; attempt++) {
    const text = await readPayload(ns, entry);
    if (text !== undefined) return { entry, text };
    const again = await ns.get(key);
    if (again?.version === entry.version) {
      throw new StorageCorruptError(ns.name, `entry '${key}' names chunks that are missing or do not match`);
    }
    entry = again;
  }
  if (!entry) return undefined;
  throw new StorageCorruptError(ns.name, `entry '${key}' kept changing while it was read`);
}

export function isConflict(err: unknown): boolean {
  return isParleyError(err, 'version_mismatch') || isParleyError(err, 'key_already_exists');
}
