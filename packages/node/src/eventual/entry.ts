/**
 * The API's view of a CRDT entry: what reads, writes and change reports hand
 * out. The value is the replica's own, frozen (deeply, once, on its first way
 * out) instead of copied per read; `peek` hands out the whole entry frozen,
 * made once per register: a replica's values are private copies (a
 * write normalizes its input into one, a peer's arrive decoded) that nothing
 * changes in place, so handing them out read-only costs nothing per read and
 * a caller cannot change what the replica holds (docs/guarantees.md).
 */
import { type Entry, type JsonValue, Register } from '@parley/crdt';
import type { EventualEntry } from '../api.js';

function deepFreeze(v: object): void {
  Object.freeze(v);
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x === 'object' && !Object.isFrozen(x)) deepFreeze(x);
    return;
  }
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== null && typeof x === 'object' && !Object.isFrozen(x)) deepFreeze(x);
  }
}

/** `v`, frozen with everything in it (a value a replica holds; see the module comment). */
export function readOnlyValue(v: JsonValue): JsonValue {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) deepFreeze(v);
  return v;
}

function makeEntry(namespace: string, key: string, e: Entry): Readonly<EventualEntry> {
  return Object.freeze({
    namespace,
    key,
    value: readOnlyValue(e.value),
    version: e.version,
    ttlSeconds: e.ttlSeconds,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    expiresAt: e.expiresAt,
  });
}

function makeRegisterEntry(r: Register, namespace: string): Readonly<EventualEntry> {
  return makeEntry(namespace, r.key, r);
}

/**
 * The read-only API entry of `e` (frozen, the value too). A register's is made
 * once and kept with it (Register.view), so every read of an unchanged key
 * returns the same object and allocates nothing; a counter's is made per call.
 */
export function readOnlyEntry(namespace: string, key: string, e: Entry): Readonly<EventualEntry> {
  if (e instanceof Register) {
    const view = e.view(makeRegisterEntry, namespace);
    // A register is held by one namespace's replica; a view made for another is never handed out.
    if (view.namespace === namespace) return view;
  }
  return makeEntry(namespace, key, e);
}

/**
 * The API entry of `e`: a fresh object (the caller's to change), its value
 * read-only. Copied field by field: spreading the frozen view costs about
 * ten times as much in V8 (its fast clone path skips frozen objects).
 */
export function toEventualEntry(namespace: string, key: string, e: Entry): EventualEntry {
  const v = readOnlyEntry(namespace, key, e);
  return {
    namespace: v.namespace,
    key: v.key,
    value: v.value,
    version: v.version,
    ttlSeconds: v.ttlSeconds,
    createdAt: v.createdAt,
    updatedAt: v.updatedAt,
    expiresAt: v.expiresAt,
  };
}
