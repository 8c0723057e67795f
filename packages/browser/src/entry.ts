/** The API entry of a replica's entry: a fresh object, its value frozen (the replica's own, never copied). */
import type { Entry, JsonValue } from '@parley/crdt';
import type { EventualEntry } from './types.js';

function deepFreeze(v: object): void {
  Object.freeze(v);
  for (const x of Object.values(v)) if (x !== null && typeof x === 'object' && !Object.isFrozen(x)) deepFreeze(x);
}

function readOnly(v: JsonValue): JsonValue {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) deepFreeze(v);
  return v;
}

export function freezeEntry(namespace: string, key: string, e: Entry): EventualEntry {
  return {
    namespace,
    key,
    value: readOnly(e.value),
    version: e.version,
    ttlSeconds: e.ttlSeconds,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    expiresAt: e.expiresAt,
  };
}
