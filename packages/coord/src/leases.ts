/**
 * Fenced leases: acquire (epochs strictly increase), renew, fenced write,
 * release, cooperative write and attach. A lease is stored as an entry whose
 * value is its lease document.
 */
import {
  InvalidArgumentError,
  KeyAlreadyExistsError,
  LeaseLostError,
  LockHeldError,
  VersionMismatchError,
} from '@parley/interface';
import { ensureRoom, liveEntry, put } from './entries.js';
import type { JsonValue } from './json.js';
import { jsonBytes, lockName, type Machine, type StoredEntry } from './machine-state.js';
import type { LeaseDocument, LeaseView, Operation, OpResult } from './types.js';
import {
  checkId,
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkOptionalBool,
  checkOptionalString,
  checkValue,
} from './validate.js';

export function leaseView(namespace: string, key: string, e: StoredEntry): LeaseView {
  const doc = e.value as unknown as LeaseDocument;
  return {
    namespace,
    key,
    epoch: doc.epoch,
    holder: doc.holder,
    deadlineAt: doc.deadlineAt,
    state: doc.state,
    version: e.version,
    ttlSeconds: e.ttlSeconds,
  };
}

export function liveLease(s: Machine, namespace: string, key: string, now: number): StoredEntry | undefined {
  const e = liveEntry(s, namespace, key, now);
  if (e && e.kind !== 'lease') {
    throw new InvalidArgumentError(`'${namespace}/${key}' holds a ${e.kind}, not a lease`, { namespace, key });
  }
  return e;
}

export function writeLease(
  s: Machine,
  namespace: string,
  key: string,
  previous: StoredEntry | undefined,
  doc: LeaseDocument,
  ttlSeconds: number,
): StoredEntry {
  // Keys in canonical order; the state inside is already a frozen canonical copy.
  const value = Object.freeze({
    deadlineAt: doc.deadlineAt,
    epoch: doc.epoch,
    holder: doc.holder,
    state: doc.state,
  }) as unknown as JsonValue;
  const valueBytes = jsonBytes(value);
  const retentionMs = s.limits.leaseRetentionSeconds * 1000;
  const expiresAt = Math.max(doc.deadlineAt, s.stampMs) + retentionMs;
  return put(s, namespace, key, previous, { kind: 'lease', value, valueBytes, ttlSeconds, expiresAt }, 'lease');
}

export function leaseState(s: Machine, state: unknown): JsonValue {
  return checkValue(state, s.limits.maxValueBytes).value;
}

export function leaseAcquire(s: Machine, op: Extract<Operation, { type: 'lease_acquire' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const holder = checkId(s.limits, 'holder', op.holder);
  const ttlSeconds = checkIntInRange('ttlSeconds', op.ttlSeconds, s.limits.minTtlSeconds, s.limits.maxTtlSeconds);
  const stealIfExpired =
    op.stealIfExpired === undefined ? true : checkOptionalBool('stealIfExpired', op.stealIfExpired);
  const hasState = Object.hasOwn(op, 'state') && op.state !== undefined;
  const newState = hasState ? leaseState(s, op.state) : undefined;
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
  const now = s.nowMs;
  const existing = liveLease(s, namespace, key, now);
  if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
  if (ifVersion !== undefined && existing?.version !== ifVersion) {
    throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
  }
  const doc = existing?.value as unknown as LeaseDocument | undefined;
  if (doc && doc.holder !== null && doc.holder !== holder) {
    const live = doc.deadlineAt > now;
    if (live || !stealIfExpired) throw new LockHeldError(lockName(namespace, key), doc.holder, doc.deadlineAt, 'lease');
  }
  if (!existing) ensureRoom(s, namespace);
  const next: LeaseDocument = {
    epoch: Math.max((doc?.epoch ?? 0) + 1, s.index),
    holder,
    deadlineAt: s.stampMs + ttlSeconds * 1000,
    state: hasState ? (newState as JsonValue) : (doc?.state ?? null),
  };
  const entry = writeLease(s, namespace, key, existing, next, ttlSeconds);
  return { type: 'lease', lease: leaseView(namespace, key, entry) };
}

/** The live lease entry if (holder, epoch) still owns it; LeaseLostError otherwise. */
export function guardLease(s: Machine, ns: unknown, k: unknown, h: unknown, epoch: unknown) {
  const namespace = checkNamespace(s.limits, ns);
  const key = checkKey(s.limits, k);
  const holder = checkId(s.limits, 'holder', h);
  const e = checkIntInRange('epoch', epoch, 0, Number.MAX_SAFE_INTEGER);
  const existing = liveEntry(s, namespace, key, s.nowMs);
  if (existing?.kind !== 'lease') throw new LeaseLostError(lockName(namespace, key), e, undefined);
  const doc = existing.value as unknown as LeaseDocument;
  if (doc.epoch !== e || doc.holder !== holder) throw new LeaseLostError(lockName(namespace, key), e, doc.epoch);
  return { namespace, key, existing, doc };
}

export function leaseRenew(s: Machine, op: Extract<Operation, { type: 'lease_renew' }>): OpResult {
  const ttlSeconds = checkIntInRange('ttlSeconds', op.ttlSeconds, s.limits.minTtlSeconds, s.limits.maxTtlSeconds);
  const { namespace, key, existing, doc } = guardLease(s, op.namespace, op.key, op.holder, op.epoch);
  const entry = writeLease(
    s,
    namespace,
    key,
    existing,
    { ...doc, deadlineAt: s.stampMs + ttlSeconds * 1000 },
    ttlSeconds,
  );
  return { type: 'lease', lease: leaseView(namespace, key, entry) };
}

export function leaseWrite(s: Machine, op: Extract<Operation, { type: 'lease_write' }>): OpResult {
  const state = leaseState(s, op.state);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const { namespace, key, existing, doc } = guardLease(s, op.namespace, op.key, op.holder, op.epoch);
  if (ifVersion !== undefined && existing.version !== ifVersion) {
    throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing.version);
  }
  const entry = writeLease(s, namespace, key, existing, { ...doc, state }, existing.ttlSeconds);
  return { type: 'lease', lease: leaseView(namespace, key, entry) };
}

export function leaseRelease(s: Machine, op: Extract<Operation, { type: 'lease_release' }>): OpResult {
  const hasState = Object.hasOwn(op, 'state') && op.state !== undefined;
  const state = hasState ? leaseState(s, op.state) : undefined;
  const { namespace, key, existing, doc } = guardLease(s, op.namespace, op.key, op.holder, op.epoch);
  const next: LeaseDocument = {
    epoch: doc.epoch,
    holder: null,
    deadlineAt: s.nowMs,
    state: hasState ? (state as JsonValue) : doc.state,
  };
  const entry = writeLease(s, namespace, key, existing, next, existing.ttlSeconds);
  return { type: 'lease', lease: leaseView(namespace, key, entry) };
}

export function cooperativeWrite(s: Machine, op: Extract<Operation, { type: 'lease_cooperative_write' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const state = leaseState(s, op.state);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
  const existing = liveLease(s, namespace, key, s.nowMs);
  if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
  if (ifVersion !== undefined && existing?.version !== ifVersion) {
    throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
  }
  if (!existing) ensureRoom(s, namespace);
  const doc = existing?.value as unknown as LeaseDocument | undefined;
  const next: LeaseDocument = doc ? { ...doc, state } : { epoch: 0, holder: null, deadlineAt: s.nowMs, state };
  const ttlSeconds = existing?.ttlSeconds ?? s.limits.defaultTtlSeconds;
  const entry = writeLease(s, namespace, key, existing, next, ttlSeconds);
  return { type: 'lease', lease: leaseView(namespace, key, entry) };
}

export function readAttach(s: Machine, ns: string, k: string, h: string, now: number): OpResult {
  const namespace = checkNamespace(s.limits, ns);
  const key = checkKey(s.limits, k);
  const holder = checkId(s.limits, 'holder', h);
  const e = liveEntry(s, namespace, key, now);
  if (e?.kind !== 'lease') return { type: 'lease_absent' };
  const doc = e.value as unknown as LeaseDocument;
  if (doc.holder !== holder || doc.deadlineAt <= now) return { type: 'lease_absent' };
  return { type: 'lease', lease: leaseView(namespace, key, e) };
}
