/**
 * Plain entries and claims on etcd: set (ttl, ifVersion, ifNotExists,
 * fence), get, delete (ifVersion, fence) and claim, with coord's checks,
 * errors and results.
 *
 * A write is a read-decide-commit loop: read the entry key (and the lock slot
 * of a fence) in one snapshot, decide exactly as coord's state machine would
 * (an entry past its deadline is absent), then commit with one transaction
 * that compares the entry's mod_revision (0: still absent) and the lock
 * slot's, and carries the call's request id. When a compare fails, the
 * transaction's failure branch returns the fresh snapshot and the loop
 * decides again; each committed write is therefore an atomic
 * read-modify-write at its transaction's revision (linearizable, as etcd's
 * transactions are), and the request id makes a resent commit apply once.
 */
import type { Entry, EntryKind, FenceRef, Operation, OpResult } from '@parley/coord';
import type { JsonValue } from '@parley/coord/shared';
import {
  checkFenceToken,
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkOptionalBool,
  checkOptionalString,
  checkValue,
} from '@parley/coord/shared';
import {
  InvalidArgumentError,
  KeyAlreadyExistsError,
  KeyNotFoundError,
  UnavailableError,
  VersionMismatchError,
} from '@parley/interface';
import type { ICompare, IKeyValue, IRequestOp, IResponseOp } from 'etcd3';
import type { EtcdContext, NewRequest, OpCall } from './context.js';
import { newRequest } from './context.js';
import { prefixEnd } from './keys.js';
import { type EntryRecord, encodeEntryRecord } from './record.js';
import { roomCompares } from './room.js';
import { decodeKv } from './stored.js';
import type { TxnOutcome } from './txn.js';
import { revisionOf, versionOf } from './version.js';

/** Decide-and-commit rounds of one write before it gives up (each lost round means another writer won). */
export const MAX_WRITE_ROUNDS = 32;

/** A live or expired entry as read, with its key-value. */
export interface ReadEntry {
  kv: IKeyValue;
  record: EntryRecord;
}

export { decodeKv } from './stored.js';

/** The entry in `kv` when it is live at `nowMs` (its deadline not reached), else undefined. */
export function liveAt(ctx: EtcdContext, kv: IKeyValue | undefined, nowMs: number): ReadEntry | undefined {
  if (!kv) return undefined;
  const record = decodeKv(ctx, kv);
  return record.expiresAt > nowMs ? { kv, record } : undefined;
}

export function entryView(namespace: string, key: string, kv: IKeyValue, record: EntryRecord): Entry {
  return recordView(namespace, key, Number(kv.mod_revision), record);
}

export function recordView(namespace: string, key: string, revision: number, r: EntryRecord): Entry {
  return {
    namespace,
    key,
    kind: r.kind,
    value: r.value,
    version: versionOf(namespace, key, revision),
    ttlSeconds: r.ttlSeconds,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    expiresAt: r.expiresAt,
  };
}

/** Compares that hold while `kv` (undefined: absent) is still the key's current state. */
export function unchanged(key: Buffer, kv: IKeyValue | undefined): ICompare {
  return { key, target: 'Mod', result: 'Equal', mod_revision: kv ? kv.mod_revision : 0 };
}

function rangeOp(key: Buffer): IRequestOp {
  return { request_range: { key } };
}

function firstKv(r: IResponseOp | undefined): IKeyValue | undefined {
  return r?.response_range?.kvs?.[0];
}

/** coord's fence argument checks (before any state is read). */
function checkFenceArgument(ctx: EtcdContext, fence: FenceRef | undefined): FenceRef | undefined {
  if (fence === undefined) return undefined;
  if (fence === null || typeof fence !== 'object') throw new InvalidArgumentError('fence must be an object');
  return {
    namespace: checkNamespace(ctx.limits, fence.namespace),
    key: checkKey(ctx.limits, fence.key),
    token: checkFenceToken(fence.token),
  };
}

export function checkTtl(ctx: EtcdContext, ttl: unknown, fallback: number): number {
  if (ttl === undefined) return fallback;
  return checkIntInRange('ttlSeconds', ttl, ctx.limits.minTtlSeconds, ctx.limits.maxTtlSeconds);
}

/** The state one round decides from: the entry's and (when fenced) the lock slot's key-values. */
export interface Snapshot {
  entry: IKeyValue | undefined;
  lock: IKeyValue | undefined;
  /** etcd's raw key count of the entry's namespace (live and awaiting cleanup), read in the same snapshot. */
  namespaceKeys: number | undefined;
  revision: number;
}

/** What a round decided: the transaction to commit, or a result that needs no write. */
type Decision =
  | { done: OpResult }
  | {
      compares: ICompare[];
      success: IRequestOp[];
      /** The result to remember under the request id, and to return. */
      result: (revision: number) => OpResult;
      /** The remembered form (values and versions left out: the retry rebuilds them). */
      stored: JsonValue;
    };

/**
 * The read-decide-commit loop of every entry write (see the file comment).
 * `replay` rebuilds the first result from a request record found on a resend.
 */
export async function writeLoop(
  ctx: EtcdContext,
  call: OpCall,
  entryKey: Buffer,
  lockKey: Buffer | undefined,
  decide: (s: Snapshot) => Promise<Decision>,
  replay: (stored: JsonValue, revision: number) => OpResult,
): Promise<OpResult> {
  // One read of the entry, the fence's lock slot and the namespace's key count (for the key bound).
  const name = ctx.keys.parseEntry(entryKey);
  const nsStart = name ? ctx.keys.namespaceEntries(name.namespace) : undefined;
  const reads: IRequestOp[] = [rangeOp(entryKey)];
  if (lockKey) reads.push(rangeOp(lockKey));
  if (nsStart) reads.push({ request_range: { key: nsStart, range_end: prefixEnd(nsStart), count_only: true } });
  const toSnapshot = (responses: IResponseOp[], revision: number): Snapshot => {
    const count = nsStart ? responses[lockKey ? 2 : 1]?.response_range?.count : undefined;
    return {
      entry: firstKv(responses[0]),
      lock: lockKey ? firstKv(responses[1]) : undefined,
      namespaceKeys: count === undefined ? undefined : Number(count),
      revision,
    };
  };
  const first = await ctx.calls.txn({ compares: [], success: reads }, call);
  let snap = toSnapshot(first.responses, first.revision);
  let request: NewRequest | undefined;
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const d = await decide(snap);
    if ('done' in d) return d.done;
    request ??= await newRequest(ctx, call);
    let out: TxnOutcome;
    try {
      out = await ctx.calls.txn(
        {
          compares: d.compares,
          success: d.success,
          failure: reads,
          request: { id: request.id, leaseId: request.leaseId, result: d.stored },
        },
        call,
      );
    } catch (err) {
      // A cleanup lease etcd no longer knows (it expired early, or etcd was restored): take a new one.
      if (err instanceof UnavailableError && /lease not found/i.test(err.message)) {
        ctx.cleanup.forgetAll();
        request = undefined;
        continue;
      }
      throw err;
    }
    if (out.replayed) return replay(out.replayed.result, out.replayed.revision);
    if (out.succeeded) return d.result(out.revision);
    snap = toSnapshot(out.responses, out.revision);
  }
  throw new UnavailableError(`write lost ${MAX_WRITE_ROUNDS} rounds in a row to concurrent writers; retry`, {
    backend: 'etcd',
  });
}

function fenceCompares(ctx: EtcdContext, fence: FenceRef | undefined, lock: IKeyValue | undefined): ICompare[] {
  return fence ? ctx.checkFence(fence, lock) : [];
}

type StoredEntryResult = { operation: 'created' | 'updated' } & Omit<Entry, 'value' | 'version' | 'namespace' | 'key'>;

export async function setEntry(
  ctx: EtcdContext,
  op: Extract<Operation, { type: 'set' }>,
  call: OpCall,
): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const { value, bytes } = checkValue(op.value, ctx.limits.maxValueBytes);
  const ttlSeconds = checkTtl(ctx, op.ttlSeconds, ctx.limits.defaultTtlSeconds);
  const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  if (ifNotExists && ifVersion !== undefined) {
    throw new InvalidArgumentError('ifNotExists and ifVersion exclude each other');
  }
  const fence = checkFenceArgument(ctx, op.fence);
  const entryKey = ctx.keys.entry(namespace, key);
  const lockKey = fence ? ctx.keys.lock(fence.namespace, fence.key) : undefined;
  const toEntry = (s: StoredEntryResult, revision: number): OpResult => ({
    type: 'entry',
    operation: s.operation,
    entry: {
      namespace,
      key,
      kind: s.kind,
      value,
      version: versionOf(namespace, key, revision),
      ttlSeconds: s.ttlSeconds,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      expiresAt: s.expiresAt,
    },
  });
  return writeLoop(
    ctx,
    call,
    entryKey,
    lockKey,
    async (snap) => {
      const compares = fenceCompares(ctx, fence, snap.lock);
      const now = ctx.clock.nowMs();
      const existing = liveAt(ctx, snap.entry, now);
      if (existing?.record.kind === 'claim') throw new KeyAlreadyExistsError(namespace, key);
      if (existing?.record.kind === 'lease') {
        throw new InvalidArgumentError(`'${namespace}/${key}' holds a lease: use the lease operations`, {
          namespace,
          key,
        });
      }
      if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
      if (ifVersion !== undefined) {
        const current = existing ? Number(existing.kv.mod_revision) : undefined;
        if (current === undefined || revisionOf(namespace, key, ifVersion) !== current) {
          throw new VersionMismatchError(
            `${namespace}/${key}`,
            ifVersion,
            existing ? entryView(namespace, key, existing.kv, existing.record).version : undefined,
          );
        }
      }
      if (!existing) compares.push(...(await roomCompares(ctx, namespace, call, snap.namespaceKeys)));
      const record: EntryRecord = {
        kind: 'value',
        value,
        valueBytes: bytes,
        ttlSeconds,
        createdAt: existing ? existing.record.createdAt : now,
        updatedAt: existing ? Math.max(now, existing.record.updatedAt) : now,
        expiresAt: now + ttlSeconds * 1000,
      };
      const leaseId = await ctx.cleanup.leaseUntil(record.expiresAt, call);
      const stored: StoredEntryResult = {
        operation: existing ? 'updated' : 'created',
        kind: 'value',
        ttlSeconds,
        createdAt: record.createdAt,
        updatedAt: record.updatedAt,
        expiresAt: record.expiresAt,
      };
      return {
        compares: [unchanged(entryKey, snap.entry), ...compares],
        success: [{ request_put: { key: entryKey, value: encodeEntryRecord(record), lease: leaseId } }],
        result: (revision) => toEntry(stored, revision),
        stored: stored as unknown as JsonValue,
      };
    },
    (stored, revision) => toEntry(stored as unknown as StoredEntryResult, revision),
  );
}

export async function getEntry(ctx: EtcdContext, op: Extract<Operation, { type: 'get' }>, call: OpCall) {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const kv = await ctx.calls.get(ctx.keys.entry(namespace, key), call);
  const live = liveAt(ctx, kv, ctx.clock.nowMs());
  if (!live) throw new KeyNotFoundError(namespace, key);
  return { type: 'got', entry: entryView(namespace, key, live.kv, live.record) } satisfies OpResult;
}

export async function deleteEntry(
  ctx: EtcdContext,
  op: Extract<Operation, { type: 'delete' }>,
  call: OpCall,
): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
  const fence = checkFenceArgument(ctx, op.fence);
  const entryKey = ctx.keys.entry(namespace, key);
  const lockKey = fence ? ctx.keys.lock(fence.namespace, fence.key) : undefined;
  const deleted: OpResult = { type: 'deleted', namespace, key };
  return writeLoop(
    ctx,
    call,
    entryKey,
    lockKey,
    async (snap) => {
      const compares = fenceCompares(ctx, fence, snap.lock);
      const existing = liveAt(ctx, snap.entry, ctx.clock.nowMs());
      if (!existing) {
        if (ifVersion !== undefined) throw new VersionMismatchError(`${namespace}/${key}`, ifVersion, undefined);
        throw new KeyNotFoundError(namespace, key);
      }
      if (existing.record.kind === 'claim') {
        throw new InvalidArgumentError(`'${namespace}/${key}' is a claim: claims are immutable`, { namespace, key });
      }
      if (ifVersion !== undefined && revisionOf(namespace, key, ifVersion) !== Number(existing.kv.mod_revision)) {
        throw new VersionMismatchError(
          `${namespace}/${key}`,
          ifVersion,
          entryView(namespace, key, existing.kv, existing.record).version,
        );
      }
      return {
        compares: [unchanged(entryKey, snap.entry), ...compares],
        success: [{ request_delete_range: { key: entryKey } }],
        result: () => deleted,
        stored: { type: 'deleted' },
      };
    },
    () => deleted,
  );
}

type StoredClaim = Omit<Entry, 'value' | 'version' | 'namespace' | 'key'>;

export async function claimEntry(
  ctx: EtcdContext,
  op: Extract<Operation, { type: 'claim' }>,
  call: OpCall,
): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const { value, bytes } = checkValue(op.value, ctx.limits.maxValueBytes);
  const ttlSeconds = checkTtl(ctx, op.ttlSeconds, ctx.limits.defaultClaimTtlSeconds);
  const entryKey = ctx.keys.entry(namespace, key);
  const won = (s: StoredClaim, revision: number): OpResult => {
    const entry: Entry = { namespace, key, value, version: versionOf(namespace, key, revision), ...s };
    return { type: 'claim', won: true, value, version: entry.version, entry };
  };
  return writeLoop(
    ctx,
    call,
    entryKey,
    undefined,
    async (snap) => {
      const now = ctx.clock.nowMs();
      const existing = liveAt(ctx, snap.entry, now);
      if (existing) {
        const entry = entryView(namespace, key, existing.kv, existing.record);
        return { done: { type: 'claim', won: false, value: entry.value, version: entry.version, entry } };
      }
      const compares = await roomCompares(ctx, namespace, call, snap.namespaceKeys);
      const record: EntryRecord = {
        kind: 'claim' as EntryKind,
        value,
        valueBytes: bytes,
        ttlSeconds,
        createdAt: now,
        updatedAt: now,
        expiresAt: now + ttlSeconds * 1000,
      };
      const leaseId = await ctx.cleanup.leaseUntil(record.expiresAt, call);
      const stored: StoredClaim = {
        kind: 'claim',
        ttlSeconds,
        createdAt: now,
        updatedAt: now,
        expiresAt: record.expiresAt,
      };
      return {
        compares: [unchanged(entryKey, snap.entry), ...compares],
        success: [{ request_put: { key: entryKey, value: encodeEntryRecord(record), lease: leaseId } }],
        result: (revision) => won(stored, revision),
        stored: stored as unknown as JsonValue,
      };
    },
    (stored, revision) => won(stored as unknown as StoredClaim, revision),
  );
}
