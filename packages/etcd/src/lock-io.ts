/**
 * The etcd reads and transactions of a lock (records: lock-records.ts):
 * one consistent read of a slot and its waiters, the compares that pin what
 * was read, and the operations that hand a slot to a holder. Fences are etcd
 * revisions: a grant decided on a read at revision R takes fence R + 1, and
 * its transaction commits only if the slot is unchanged since R, so it
 * commits at a revision ≥ R + 1 — every fence is at most the revision of the
 * write that granted it and larger than every fence granted before on the
 * slot, across all members, crashes and leader changes.
 */

import type { CoordLimits } from '@parley/coord';
import type { JsonValue } from '@parley/coord/shared';
import { lockName } from '@parley/coord/shared';
import { DecodeError, LockHeldError, StorageCorruptError, UnavailableError } from '@parley/interface';
import type { ICompare, IKeyValue, IRequestOp } from 'etcd3';
import type { EtcdContext, OpCall } from './context.js';
import { prefixEnd } from './keys.js';
import {
  decodeSlot,
  decodeWaiter,
  encodeSlot,
  encodeWaiter,
  type HolderRecord,
  type LockSnapshot,
  type LockState,
  lockState,
  maxLockRecordBytes,
  type SlotRecord,
  type WaiterKv,
} from './lock-records.js';
import type { TxnOutcome, TxnSpec } from './txn.js';

/** Waiter keys read per lock (live waiters are bounded by maxWaitersPerLock; the rest are left-overs). */
export const MAX_WAITER_KEYS = 1024;
/** Read-decide-commit rounds of one lock operation before it gives up as `unavailable` (contention). */
export const MAX_LOCK_ROUNDS = 64;

function corrupt(what: string, err: unknown): never {
  if (err instanceof DecodeError) throw new StorageCorruptError('etcd', `${what}: ${err.message}`);
  throw err;
}

export function decodeSlotKv(kv: IKeyValue, limits: Readonly<CoordLimits>): SlotRecord {
  try {
    return decodeSlot(kv.value, maxLockRecordBytes(limits));
  } catch (err) {
    return corrupt(`lock slot ${kv.key.toString('utf8')}`, err);
  }
}

export function decodeWaiterKv(kv: IKeyValue, prefixLength: number, limits: Readonly<CoordLimits>): WaiterKv {
  let record: WaiterKv['record'];
  try {
    record = decodeWaiter(kv.value, maxLockRecordBytes(limits));
  } catch (err) {
    return corrupt(`lock waiter ${kv.key.toString('utf8')}`, err);
  }
  return {
    key: kv.key,
    id: kv.key.subarray(prefixLength).toString('utf8'),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    record,
  };
}

/**
 * Commits one lock transaction. A cleanup lease etcd no longer knows (it ran
 * out early, or etcd was restored from a backup) fails the put: the cache is
 * dropped and the outcome reads as a lost round (`leaseLost`: nothing was
 * applied, so a request id may be replaced too), and the caller reads again
 * and builds its puts with a fresh lease.
 */
export async function commit(
  ctx: EtcdContext,
  spec: TxnSpec,
  call: OpCall,
): Promise<TxnOutcome & { leaseLost?: true }> {
  try {
    return await ctx.calls.txn(spec, call);
  } catch (err) {
    if (err instanceof UnavailableError && /lease not found/i.test(err.message)) {
      ctx.cleanup.forgetAll();
      return { succeeded: false, revision: 0, responses: [], leaseLost: true };
    }
    throw err;
  }
}

/** One consistent read of the slot and its waiter keys (a read-only transaction: one revision). */
export async function readLock(ctx: EtcdContext, namespace: string, key: string, call: OpCall): Promise<LockSnapshot> {
  const slotKey = ctx.keys.lock(namespace, key);
  const prefix = ctx.keys.lockWaiters(namespace, key);
  const out = await ctx.calls.txn(
    {
      compares: [],
      success: [
        { request_range: { key: slotKey } },
        {
          request_range: {
            key: prefix,
            range_end: prefixEnd(prefix),
            sort_target: 'Create',
            sort_order: 'Ascend',
            limit: MAX_WAITER_KEYS,
          },
        },
      ],
    },
    call,
  );
  const slotKv = out.responses[0]?.response_range?.kvs?.[0];
  const waiterKvs = out.responses[1]?.response_range?.kvs ?? [];
  return {
    revision: out.revision,
    slotKv,
    slot: slotKv ? decodeSlotKv(slotKv, ctx.limits) : undefined,
    waiters: waiterKvs.map((kv) => decodeWaiterKv(kv, prefix.length, ctx.limits)),
  };
}

/** The slot is as read (absent stays absent). */
export function slotUnchanged(ctx: EtcdContext, namespace: string, key: string, s: LockSnapshot): ICompare {
  const k = ctx.keys.lock(namespace, key);
  return s.slotKv
    ? { key: k, target: 'Mod', result: 'Equal', mod_revision: s.slotKv.mod_revision }
    : { key: k, target: 'Create', result: 'Equal', create_revision: 0 };
}

/** No waiter was queued since the read: every waiter key was created at or before its revision. */
export function noNewWaiter(ctx: EtcdContext, namespace: string, key: string, s: LockSnapshot): ICompare {
  const prefix = ctx.keys.lockWaiters(namespace, key);
  return {
    key: prefix,
    range_end: prefixEnd(prefix),
    target: 'Create',
    result: 'Less',
    create_revision: s.revision + 1,
  };
}

/** Deletes the waiter keys anyone may remove: waits that ended, and grant markers of past holders. */
export function sweepWaiters(st: LockState, keep?: WaiterKv): IRequestOp[] {
  return [...st.stale, ...st.spent].filter((w) => w !== keep).map((w) => ({ request_delete_range: { key: w.key } }));
}

/** How long a slot's cleanup lease must outlive it: past the holder and the idle retention. */
export function slotCleanupMs(limits: Readonly<CoordLimits>, slot: SlotRecord, now: number): number {
  const busyUntil = slot.holder ? Math.max(slot.holder.expiresAt, now) : Math.max(slot.freeSince, now);
  return busyUntil + limits.idleLockRetentionSeconds * 1000;
}

export async function putSlot(
  ctx: EtcdContext,
  namespace: string,
  key: string,
  slot: SlotRecord,
  now: number,
  call: OpCall,
): Promise<IRequestOp> {
  const lease = await ctx.cleanup.leaseUntil(slotCleanupMs(ctx.limits, slot, now), call);
  return { request_put: { key: ctx.keys.lock(namespace, key), value: encodeSlot(slot), lease } };
}

/** The next fence for a decision made on snapshot `s` (see the file comment). */
export function nextFence(s: LockSnapshot): number {
  return Math.max(s.revision + 1, (s.slot?.lastFence ?? 0) + 1);
}

/**
 * The compares and operations that hand the slot to waiter `w` (first in
 * line) at `now`: the slot gets the holder, the waiter key becomes a grant
 * marker (so the waiting call learns of it), and waits that ended are swept.
 */
export async function grantToWaiter(
  ctx: EtcdContext,
  namespace: string,
  key: string,
  s: LockSnapshot,
  st: LockState,
  w: WaiterKv,
  now: number,
  call: OpCall,
  freeSince: number = s.slot?.freeSince ?? now,
): Promise<{ compares: ICompare[]; success: IRequestOp[]; holder: HolderRecord }> {
  const fence = nextFence(s);
  const holder: HolderRecord = {
    owner: w.record.owner,
    fence,
    acquiredAt: now,
    expiresAt: now + w.record.ttlSeconds * 1000,
    ttlSeconds: w.record.ttlSeconds,
    metadata: w.record.metadata,
  };
  const slot: SlotRecord = { holder, lastFence: fence, freeSince };
  const markerLease = await ctx.cleanup.leaseUntil(Math.max(holder.expiresAt, w.record.waitDeadlineAt), call);
  return {
    compares: [
      slotUnchanged(ctx, namespace, key, s),
      { key: w.key, target: 'Mod', result: 'Equal', mod_revision: w.modRevision },
    ],
    success: [
      await putSlot(ctx, namespace, key, slot, now, call),
      {
        request_put: {
          key: w.key,
          value: encodeWaiter({ ...w.record, granted: { fence, acquiredAt: now } }),
          lease: markerLease,
        },
      },
      ...sweepWaiters(st, w),
    ],
    holder,
  };
}

/**
 * Brings a lock up to `now` as coord's normalizedSlot does: while no holder
 * is live and a waiter is still waiting, hands the slot to the first one
 * (anyone may make that transaction; the waiter learns of it from its
 * marker). Returns a snapshot in which either a holder is live or nobody
 * waits.
 */
export async function settledLock(
  ctx: EtcdContext,
  namespace: string,
  key: string,
  call: OpCall,
): Promise<{ snapshot: LockSnapshot; state: LockState; now: number }> {
  for (let round = 0; round < MAX_LOCK_ROUNDS; round++) {
    const snapshot = await readLock(ctx, namespace, key, call);
    const now = ctx.clock.nowMs();
    const state = lockState(snapshot, now, ctx.limits);
    const first = state.live[0];
    if (state.holder || first === undefined) return { snapshot, state, now };
    const g = await grantToWaiter(ctx, namespace, key, snapshot, state, first, now, call);
    await commit(ctx, { compares: g.compares, success: g.success }, call);
  }
  throw contention(namespace, key);
}

/** Retryable: the lock changed under every one of MAX_LOCK_ROUNDS read-decide-commit rounds. */
export function contention(namespace: string, key: string): UnavailableError {
  return new UnavailableError(`lock '${lockName(namespace, key)}' changed on each of ${MAX_LOCK_ROUNDS} attempts`, {
    backend: 'etcd',
  });
}

export function heldError(namespace: string, key: string, st: LockState): LockHeldError {
  return new LockHeldError(lockName(namespace, key), st.holder?.owner ?? '', st.holder?.expiresAt ?? 0);
}

/** A result as stored with its request id (JSON). */
export function asJson(v: unknown): JsonValue {
  return v as JsonValue;
}
