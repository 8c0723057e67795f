/**
 * Plain entries and claims: set (with ifNotExists, ifVersion and fences),
 * get, delete, list (list-page.ts), delete by
 * namespace pattern, and claim (first writer wins, immutable).
 */
import {
  InvalidArgumentError,
  KeyAlreadyExistsError,
  KeyNotFoundError,
  NamespaceFullError,
  VersionMismatchError,
} from '@parley/interface';
import { compileGlob, globMatch } from './glob.js';
import type { JsonValue } from './json.js';
import { listPage, planList } from './list-page.js';
import { checkFence } from './locks.js';
import { lockName, type Machine, type StoredEntry } from './machine-state.js';
import type { Entry, EntryKind, Operation, OpResult } from './types.js';
import {
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkOptionalBool,
  checkOptionalString,
  checkValue,
} from './validate.js';
import { versionToken, type WriteKind } from './version.js';

export function liveEntry(s: Machine, namespace: string, key: string, now: number): StoredEntry | undefined {
  const entry = s.namespaces.get(namespace)?.get(key);
  return entry && entry.expiresAt > now ? entry : undefined;
}

export function view(namespace: string, key: string, e: StoredEntry): Entry {
  return {
    namespace,
    key,
    kind: e.kind,
    value: e.value,
    version: e.version,
    ttlSeconds: e.ttlSeconds,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    expiresAt: e.expiresAt,
  };
}

export function checkTtl(s: Machine, ttl: unknown, fallback: number): number {
  if (ttl === undefined) return fallback;
  return checkIntInRange('ttlSeconds', ttl, s.limits.minTtlSeconds, s.limits.maxTtlSeconds);
}

/** Throws NamespaceFullError when a new key would exceed the bound (expired keys are purged first). */
export function ensureRoom(s: Machine, namespace: string): void {
  const map = s.namespaces.get(namespace);
  if (!map || map.size < s.limits.maxKeysPerNamespace) return;
  for (const [key, e] of map) if (e.expiresAt <= s.nowMs) map.delete(key);
  if (map.size >= s.limits.maxKeysPerNamespace) {
    throw new NamespaceFullError(namespace, s.limits.maxKeysPerNamespace);
  }
}

export function put(
  s: Machine,
  namespace: string,
  key: string,
  previous: StoredEntry | undefined,
  fields: { kind: EntryKind; value: JsonValue; valueBytes: number; ttlSeconds: number; expiresAt: number },
  writeKind: WriteKind,
): StoredEntry {
  let map = s.namespaces.get(namespace);
  if (!map) {
    map = new Map();
    s.namespaces.set(namespace, map);
  }
  const entry: StoredEntry = {
    kind: fields.kind,
    value: fields.value,
    valueBytes: fields.valueBytes,
    ttlSeconds: fields.ttlSeconds,
    expiresAt: fields.expiresAt,
    version: versionToken(s.versionKey, s.index, s.term, namespace, key, writeKind),
    createdAt: previous ? previous.createdAt : s.stampMs,
    updatedAt: s.stampMs,
  };
  map.set(key, entry);
  s.due(entry.expiresAt);
  return entry;
}

export function remove(s: Machine, namespace: string, key: string): void {
  const map = s.namespaces.get(namespace);
  if (!map) return;
  map.delete(key);
  if (map.size === 0) s.namespaces.delete(namespace);
}

/** A set's arguments, validated: everything `setEntry` checks before it looks at the state. */
function setArgs(s: Machine, op: Extract<Operation, { type: 'set' }>) {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const { value, bytes } = checkValue(op.value, s.limits.maxValueBytes);
  const ttlSeconds = checkTtl(s, op.ttlSeconds, s.limits.defaultTtlSeconds);
  const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  if (ifNotExists && ifVersion !== undefined) {
    throw new InvalidArgumentError('ifNotExists and ifVersion exclude each other');
  }
  return { namespace, key, value, bytes, ttlSeconds, ifNotExists, ifVersion };
}

/**
 * The `version_mismatch` that `setEntry` would throw for `op` at time `now`,
 * when that is surely its answer: a valid, unfenced set with `ifVersion` on a
 * plain value (or absent) key whose live version is another. undefined when
 * it would do anything else (write, or fail otherwise). Changes nothing.
 */
export function setMismatch(
  s: Machine,
  op: Extract<Operation, { type: 'set' }>,
  now: number,
): VersionMismatchError | undefined {
  if (op.ifVersion === undefined || op.fence !== undefined) return undefined;
  let args: ReturnType<typeof setArgs>;
  try {
    args = setArgs(s, op);
  } catch {
    return undefined;
  }
  const { namespace, key, ifVersion } = args;
  const existing = liveEntry(s, namespace, key, now);
  if (ifVersion === undefined || (existing !== undefined && existing.kind !== 'value')) return undefined;
  if (existing?.version === ifVersion) return undefined;
  return new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
}

export function setEntry(s: Machine, op: Extract<Operation, { type: 'set' }>): OpResult {
  const { namespace, key, value, bytes, ttlSeconds, ifNotExists, ifVersion } = setArgs(s, op);
  checkFence(s, op.fence);
  const existing = liveEntry(s, namespace, key, s.nowMs);
  if (existing?.kind === 'claim') throw new KeyAlreadyExistsError(namespace, key);
  if (existing?.kind === 'lease') {
    throw new InvalidArgumentError(`'${namespace}/${key}' holds a lease: use the lease operations`, {
      namespace,
      key,
    });
  }
  if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
  if (ifVersion !== undefined && existing?.version !== ifVersion) {
    throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
  }
  if (!existing) ensureRoom(s, namespace);
  const entry = put(
    s,
    namespace,
    key,
    existing,
    { kind: 'value', value, valueBytes: bytes, ttlSeconds, expiresAt: s.stampMs + ttlSeconds * 1000 },
    'set',
  );
  return { type: 'entry', entry: view(namespace, key, entry), operation: existing ? 'updated' : 'created' };
}

export function readGet(s: Machine, ns: string, k: string, now: number): OpResult {
  const namespace = checkNamespace(s.limits, ns);
  const key = checkKey(s.limits, k);
  const entry = liveEntry(s, namespace, key, now);
  if (!entry) throw new KeyNotFoundError(namespace, key);
  return { type: 'got', entry: view(namespace, key, entry) };
}

export function deleteEntry(s: Machine, op: Extract<Operation, { type: 'delete' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  checkFence(s, op.fence);
  const existing = liveEntry(s, namespace, key, s.nowMs);
  if (!existing) {
    if (ifVersion !== undefined) throw new VersionMismatchError(lockName(namespace, key), ifVersion, undefined);
    throw new KeyNotFoundError(namespace, key);
  }
  if (existing.kind === 'claim') {
    throw new InvalidArgumentError(`'${namespace}/${key}' is a claim: claims are immutable`, { namespace, key });
  }
  if (ifVersion !== undefined && existing.version !== ifVersion) {
    throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing.version);
  }
  remove(s, namespace, key);
  return { type: 'deleted', namespace, key };
}

export function readList(s: Machine, op: Extract<Operation, { type: 'list' }>, now: number): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const plan = planList(s.limits, op);
  const map = s.namespaces.get(namespace);
  const { items, nextCursor } = listPage(
    plan,
    liveEntries(map, now),
    (e) => e.valueBytes,
    (key, e) => view(namespace, key, e),
  );
  return { type: 'list', items, nextCursor };
}

function* liveEntries(map: Map<string, StoredEntry> | undefined, now: number): Iterable<[string, StoredEntry]> {
  if (!map) return;
  for (const entry of map) if (entry[1].expiresAt > now) yield entry;
}

/**
 * Deletes the keys matching `pattern`; with `maxKeys`, only the `maxKeys`
 * smallest (in key order) after `after`, and `resume_after` names the last
 * of them when more matching keys remain (a caller bounds the work of one
 * command by repeating from there). The live keys removed, in key order, go
 * to the apply output (`removedKeys`) for change feeds.
 */
export function deleteNamespace(s: Machine, op: Extract<Operation, { type: 'delete_namespace' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  if (op.confirm !== true) throw new InvalidArgumentError('deleteNamespace requires confirm: true');
  const pattern = checkOptionalString('pattern', op.pattern) ?? '*';
  const glob = compileGlob(pattern);
  const after = op.after === undefined ? undefined : checkKey(s.limits, op.after);
  const maxKeys =
    op.maxKeys === undefined ? undefined : checkIntInRange('maxKeys', op.maxKeys, 1, s.limits.maxKeysPerNamespace);
  const map = s.namespaces.get(namespace);
  let deleted = 0;
  let resumeAfter: string | undefined;
  if (map) {
    let matched: string[] = [];
    for (const key of map.keys()) if ((after === undefined || key > after) && globMatch(glob, key)) matched.push(key);
    // Key order, not the map's insertion order: a replica restored from a snapshot must pick and report the same keys.
    matched.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (maxKeys !== undefined && matched.length > maxKeys) {
      matched = matched.slice(0, maxKeys);
      resumeAfter = matched.at(-1);
    }
    for (const key of matched) {
      if ((map.get(key) as StoredEntry).expiresAt > s.nowMs) {
        deleted++;
        s.removedKeys.push(key);
      }
      map.delete(key);
    }
    if (map.size === 0) s.namespaces.delete(namespace);
  }
  return {
    type: 'namespace_deleted',
    deleted_count: deleted,
    namespace,
    pattern_used: pattern,
    ...(resumeAfter === undefined ? {} : { resume_after: resumeAfter }),
  };
}

export function claim(s: Machine, op: Extract<Operation, { type: 'claim' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const { value, bytes } = checkValue(op.value, s.limits.maxValueBytes);
  const ttlSeconds = checkTtl(s, op.ttlSeconds, s.limits.defaultClaimTtlSeconds);
  const existing = liveEntry(s, namespace, key, s.nowMs);
  if (existing) {
    return {
      type: 'claim',
      won: false,
      value: existing.value,
      version: existing.version,
      entry: view(namespace, key, existing),
    };
  }
  ensureRoom(s, namespace);
  const entry = put(
    s,
    namespace,
    key,
    undefined,
    { kind: 'claim', value, valueBytes: bytes, ttlSeconds, expiresAt: s.stampMs + ttlSeconds * 1000 },
    'claim',
  );
  return { type: 'claim', won: true, value, version: entry.version, entry: view(namespace, key, entry) };
}
