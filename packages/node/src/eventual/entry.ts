/** The API's view of a CRDT entry: what reads, writes and change reports hand out (a copy of the value). */
import type { Entry, JsonValue } from '@parley/crdt';
import type { EventualEntry } from '../api.js';

function copyValue(v: JsonValue): JsonValue {
  return v !== null && typeof v === 'object' ? (structuredClone(v) as JsonValue) : v;
}

export function toEventualEntry(namespace: string, key: string, e: Entry): EventualEntry {
  return {
    namespace,
    key,
    value: copyValue(e.value),
    version: e.version,
    ttlSeconds: e.ttlSeconds,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    expiresAt: e.expiresAt,
  };
}
