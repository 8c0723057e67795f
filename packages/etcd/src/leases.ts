/**
 * Fenced leases on etcd: lease_acquire, lease_renew, lease_write,
 * lease_release, lease_cooperative_write and lease_attach, with the results,
 * errors and codes of coord's state machine (packages/coord/src/leases.ts).
 *
 * A lease is a strong entry of kind 'lease' (record.ts, under
 * `keys.entry(ns, key)`) whose value is coord's LeaseDocument
 * `{deadlineAt, epoch, holder, state}`; `get`, `list` and `delete` see it as
 * on the built-in backend. Every write is entries.ts's read-decide-commit
 * loop: the transaction compares the entry's mod_revision and carries the
 * call's request id.
 *
 * - **Epochs are etcd revisions.** An acquisition decided on a read at
 *   revision R takes epoch max(R + 1, previous epoch + 1) and commits only if
 *   the entry is unchanged since R, so at a revision ≥ R + 1: every epoch is
 *   at most the revision of the write that set it, and larger than every
 *   epoch set before on the key (also across deletes and expiry, since R
 *   covers them). Epochs strictly increase per key across members, crashes
 *   and etcd leader changes; they are not consecutive.
 * - **Deadlines, not etcd leases.** `deadlineAt` (the holder's) and the
 *   entry's `expiresAt` (deadline + leaseRetentionSeconds) are ms on the
 *   calling node's clock, judged on every read and conditional write. The
 *   etcd lease attached to the key only deletes it after `expiresAt`, so
 *   etcd's TTL reset on a leader change (etcd issue 9888) changes nobody's
 *   remaining time.
 * - As on the built-in backend, renew and write check (holder, epoch) and the
 *   entry's life, not the holder's deadline: a holder whose deadline passed
 *   keeps its lease until someone else acquires it (stealIfExpired) — attach,
 *   a read, treats it as gone.
 */

import type { LeaseDocument, LeaseView, Operation, OpResult } from '@parley/coord';
import type { JsonValue } from '@parley/coord/shared';
import {
  checkId,
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkOptionalBool,
  checkOptionalString,
  checkValue,
  jsonBytes,
  lockName,
} from '@parley/coord/shared';
import {
  InvalidArgumentError,
  KeyAlreadyExistsError,
  LeaseLostError,
  LockHeldError,
  UnavailableError,
  VersionMismatchError,
} from '@parley/interface';
import type { IKeyValue } from 'etcd3';
import type { EtcdContext, OpCall, OpHandler } from './context.js';
import { decodeKv, liveAt, type ReadEntry, unchanged, writeLoop } from './entries.js';
import { type EntryRecord, encodeEntryRecord } from './record.js';
import { roomCompares } from './room.js';
import { revisionOf, versionOf } from './version.js';

type Op<T extends Operation['type']> = Extract<Operation, { type: T }>;

/** One read of entries.ts's write loop: the entry's key-value and the namespace's raw key count. */
type WriteSnapshot = Parameters<Parameters<typeof writeLoop>[4]>[0];

/**
 * A lease view as remembered with a request id: everything but the version
 * (the write's revision gives it) and the state (up to the value limit, too
 * large for a request record: a resend takes it from its operation, or reads
 * the entry back at the write's revision).
 */
type StoredLease = Omit<LeaseView, 'version' | 'state'>;

function viewAt(stored: StoredLease, state: JsonValue, revision: number): OpResult {
  return { type: 'lease', lease: { ...stored, state, version: versionOf(stored.namespace, stored.key, revision) } };
}

function docOf(e: ReadEntry): LeaseDocument {
  return e.record.value as unknown as LeaseDocument;
}

function versionOfEntry(namespace: string, key: string, e: ReadEntry | undefined): string | undefined {
  return e ? versionOf(namespace, key, Number(e.kv.mod_revision)) : undefined;
}

/** coord's ifVersion rule: the guard must name the live entry's current version. */
function checkIfVersion(namespace: string, key: string, ifVersion: string, e: ReadEntry | undefined): void {
  if (!e || revisionOf(namespace, key, ifVersion) !== Number(e.kv.mod_revision)) {
    throw new VersionMismatchError(lockName(namespace, key), ifVersion, versionOfEntry(namespace, key, e));
  }
}

/** coord's liveLease: the live entry, which must be a lease. */
function liveLease(ctx: EtcdContext, namespace: string, key: string, kv: IKeyValue | undefined, now: number) {
  const e = liveAt(ctx, kv, now);
  if (e && e.record.kind !== 'lease') {
    throw new InvalidArgumentError(`'${namespace}/${key}' holds a ${e.record.kind}, not a lease`, { namespace, key });
  }
  return e;
}

/**
 * The write of lease document `doc` over `previous` (coord's writeLease):
 * the entry lives until the deadline (or now) plus leaseRetentionSeconds.
 */
async function leaseWriteDecision(
  ctx: EtcdContext,
  call: OpCall,
  namespace: string,
  key: string,
  snap: WriteSnapshot,
  previous: ReadEntry | undefined,
  doc: LeaseDocument,
  ttlSeconds: number,
  now: number,
) {
  const entryKey = ctx.keys.entry(namespace, key);
  const value = { deadlineAt: doc.deadlineAt, epoch: doc.epoch, holder: doc.holder, state: doc.state } as JsonValue;
  const record: EntryRecord = {
    kind: 'lease',
    value,
    valueBytes: jsonBytes(value),
    ttlSeconds,
    createdAt: previous ? previous.record.createdAt : now,
    updatedAt: previous ? Math.max(now, previous.record.updatedAt) : now,
    expiresAt: Math.max(doc.deadlineAt, now) + ctx.limits.leaseRetentionSeconds * 1000,
  };
  const compares = [unchanged(entryKey, snap.entry)];
  if (!previous) compares.push(...(await roomCompares(ctx, namespace, call, snap.namespaceKeys)));
  const leaseId = await ctx.cleanup.leaseUntil(record.expiresAt, call);
  const stored: StoredLease = {
    namespace,
    key,
    epoch: doc.epoch,
    holder: doc.holder,
    deadlineAt: doc.deadlineAt,
    ttlSeconds,
  };
  return {
    compares,
    success: [{ request_put: { key: entryKey, value: encodeEntryRecord(record), lease: leaseId } }],
    result: (revision: number) => viewAt(stored, doc.state, revision),
    stored: stored as unknown as JsonValue,
  };
}

const STATE_FROM_HISTORY: unique symbol = Symbol('state read back at the write revision');

/**
 * Runs a lease write through entries.ts's loop. A resend answered from the
 * request record gets its state from `opState` (the operation wrote it) or,
 * when the write kept the previous state, from the entry as of the write's
 * revision.
 */
async function leaseLoop(
  ctx: EtcdContext,
  call: OpCall,
  namespace: string,
  key: string,
  opState: JsonValue | undefined,
  decide: Parameters<typeof writeLoop>[4],
): Promise<OpResult> {
  const entryKey = ctx.keys.entry(namespace, key);
  let replayedAt: number | undefined;
  const result = await writeLoop(ctx, call, entryKey, undefined, decide, (stored, revision) => {
    if (opState !== undefined) return viewAt(stored as unknown as StoredLease, opState, revision);
    replayedAt = revision;
    return viewAt(stored as unknown as StoredLease, STATE_FROM_HISTORY as unknown as JsonValue, revision);
  });
  if (replayedAt === undefined || result.type !== 'lease') return result;
  const res = await ctx.calls.range({ key: entryKey, revision: replayedAt }, call);
  const kv = res.kvs[0];
  const written = kv ? decodeKv(ctx, kv) : undefined;
  if (written?.kind !== 'lease')
    throw new UnavailableError('the replayed lease write is no longer readable', { backend: 'etcd' });
  return { type: 'lease', lease: { ...result.lease, state: (written.value as unknown as LeaseDocument).state } };
}

function checkState(ctx: EtcdContext, state: unknown): JsonValue {
  return checkValue(state, ctx.limits.maxValueBytes).value;
}

async function leaseAcquire(ctx: EtcdContext, op: Op<'lease_acquire'>, call: OpCall): Promise<OpResult> {
  const { limits } = ctx;
  const namespace = checkNamespace(limits, op.namespace);
  const key = checkKey(limits, op.key);
  const holder = checkId(limits, 'holder', op.holder);
  const ttlSeconds = checkIntInRange('ttlSeconds', op.ttlSeconds, limits.minTtlSeconds, limits.maxTtlSeconds);
  const stealIfExpired =
    op.stealIfExpired === undefined ? true : checkOptionalBool('stealIfExpired', op.stealIfExpired);
  const hasState = Object.hasOwn(op, 'state') && op.state !== undefined;
  const newState = hasState ? checkState(ctx, op.state) : undefined;
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
  return leaseLoop(ctx, call, namespace, key, newState, async (snap) => {
    const now = ctx.clock.nowMs();
    const existing = liveLease(ctx, namespace, key, snap.entry, now);
    if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
    if (ifVersion !== undefined) checkIfVersion(namespace, key, ifVersion, existing);
    const doc = existing ? docOf(existing) : undefined;
    if (doc && doc.holder !== null && doc.holder !== holder) {
      const live = doc.deadlineAt > now;
      if (live || !stealIfExpired)
        throw new LockHeldError(lockName(namespace, key), doc.holder, doc.deadlineAt, 'lease');
    }
    const next: LeaseDocument = {
      epoch: Math.max((doc?.epoch ?? 0) + 1, snap.revision + 1),
      holder,
      deadlineAt: now + ttlSeconds * 1000,
      state: hasState ? (newState as JsonValue) : (doc?.state ?? null),
    };
    return leaseWriteDecision(ctx, call, namespace, key, snap, existing, next, ttlSeconds, now);
  });
}

/** coord's guardLease: the live lease entry if (holder, epoch) still owns it; LeaseLostError otherwise. */
function guardLease(
  ctx: EtcdContext,
  namespace: string,
  key: string,
  holder: string,
  epoch: number,
  kv: IKeyValue | undefined,
  now: number,
) {
  const existing = liveAt(ctx, kv, now);
  if (existing?.record.kind !== 'lease') throw new LeaseLostError(lockName(namespace, key), epoch, undefined);
  const doc = docOf(existing);
  if (doc.epoch !== epoch || doc.holder !== holder)
    throw new LeaseLostError(lockName(namespace, key), epoch, doc.epoch);
  return { existing, doc };
}

function guardArgs(ctx: EtcdContext, op: { namespace: unknown; key: unknown; holder: unknown; epoch: unknown }) {
  return {
    namespace: checkNamespace(ctx.limits, op.namespace),
    key: checkKey(ctx.limits, op.key),
    holder: checkId(ctx.limits, 'holder', op.holder),
    epoch: checkIntInRange('epoch', op.epoch, 0, Number.MAX_SAFE_INTEGER),
  };
}

async function leaseRenew(ctx: EtcdContext, op: Op<'lease_renew'>, call: OpCall): Promise<OpResult> {
  const ttlSeconds = checkIntInRange('ttlSeconds', op.ttlSeconds, ctx.limits.minTtlSeconds, ctx.limits.maxTtlSeconds);
  const { namespace, key, holder, epoch } = guardArgs(ctx, op);
  return leaseLoop(ctx, call, namespace, key, undefined, async (snap) => {
    const now = ctx.clock.nowMs();
    const { existing, doc } = guardLease(ctx, namespace, key, holder, epoch, snap.entry, now);
    const next = { ...doc, deadlineAt: now + ttlSeconds * 1000 };
    return leaseWriteDecision(ctx, call, namespace, key, snap, existing, next, ttlSeconds, now);
  });
}

async function leaseWrite(ctx: EtcdContext, op: Op<'lease_write'>, call: OpCall): Promise<OpResult> {
  const state = checkState(ctx, op.state);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const { namespace, key, holder, epoch } = guardArgs(ctx, op);
  return leaseLoop(ctx, call, namespace, key, state, async (snap) => {
    const now = ctx.clock.nowMs();
    const { existing, doc } = guardLease(ctx, namespace, key, holder, epoch, snap.entry, now);
    if (ifVersion !== undefined) checkIfVersion(namespace, key, ifVersion, existing);
    const next = { ...doc, state };
    return leaseWriteDecision(ctx, call, namespace, key, snap, existing, next, existing.record.ttlSeconds, now);
  });
}

async function leaseRelease(ctx: EtcdContext, op: Op<'lease_release'>, call: OpCall): Promise<OpResult> {
  const hasState = Object.hasOwn(op, 'state') && op.state !== undefined;
  const state = hasState ? checkState(ctx, op.state) : undefined;
  const { namespace, key, holder, epoch } = guardArgs(ctx, op);
  return leaseLoop(ctx, call, namespace, key, state, async (snap) => {
    const now = ctx.clock.nowMs();
    const { existing, doc } = guardLease(ctx, namespace, key, holder, epoch, snap.entry, now);
    const next: LeaseDocument = {
      epoch: doc.epoch,
      holder: null,
      deadlineAt: now,
      state: hasState ? (state as JsonValue) : doc.state,
    };
    return leaseWriteDecision(ctx, call, namespace, key, snap, existing, next, existing.record.ttlSeconds, now);
  });
}

async function leaseCooperativeWrite(
  ctx: EtcdContext,
  op: Op<'lease_cooperative_write'>,
  call: OpCall,
): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const state = checkState(ctx, op.state);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
  return leaseLoop(ctx, call, namespace, key, state, async (snap) => {
    const now = ctx.clock.nowMs();
    const existing = liveLease(ctx, namespace, key, snap.entry, now);
    if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
    if (ifVersion !== undefined) checkIfVersion(namespace, key, ifVersion, existing);
    const doc = existing ? docOf(existing) : undefined;
    const next: LeaseDocument = doc ? { ...doc, state } : { epoch: 0, holder: null, deadlineAt: now, state };
    const ttlSeconds = existing?.record.ttlSeconds ?? ctx.limits.defaultTtlSeconds;
    return leaseWriteDecision(ctx, call, namespace, key, snap, existing, next, ttlSeconds, now);
  });
}

async function leaseAttach(ctx: EtcdContext, op: Op<'lease_attach'>, call: OpCall): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const holder = checkId(ctx.limits, 'holder', op.holder);
  const kv = await ctx.calls.get(ctx.keys.entry(namespace, key), call);
  const now = ctx.clock.nowMs();
  const e = liveAt(ctx, kv, now);
  if (e?.record.kind !== 'lease') return { type: 'lease_absent' };
  const doc = docOf(e);
  if (doc.holder !== holder || doc.deadlineAt <= now) return { type: 'lease_absent' };
  const stored: StoredLease = {
    namespace,
    key,
    epoch: doc.epoch,
    holder: doc.holder,
    deadlineAt: doc.deadlineAt,
    ttlSeconds: e.record.ttlSeconds,
  };
  return viewAt(stored, doc.state, Number(e.kv.mod_revision));
}

/** The handler of the lease_* operations. */
export const leaseOperation: OpHandler = (ctx, op, call) => {
  switch (op.type) {
    case 'lease_acquire':
      return leaseAcquire(ctx, op, call);
    case 'lease_renew':
      return leaseRenew(ctx, op, call);
    case 'lease_write':
      return leaseWrite(ctx, op, call);
    case 'lease_release':
      return leaseRelease(ctx, op, call);
    case 'lease_cooperative_write':
      return leaseCooperativeWrite(ctx, op, call);
    case 'lease_attach':
      return leaseAttach(ctx, op, call);
    default:
      return Promise.reject(new InvalidArgumentError(`'${op.type}' is not a lease operation`));
  }
};
