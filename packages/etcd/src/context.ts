/**
 * What every operation module of the etcd backend gets (entries.ts,
 * list.ts, and the lease and lock side: leases.ts, locks.ts, fence.ts): the
 * bounded etcd calls, the key layout, cleanup leases, coord's limits, the
 * clock, and the fence check that fenced entry writes run.
 *
 * The seam with the lease and lock side:
 * - an operation module exports `(ctx: EtcdContext, op, call: OpCall) => Promise<OpResult>`
 *   for its operation types; backend.ts routes `lease_*` and `lock_*` to them;
 * - fence.ts provides `FenceCheck` (below); `set`/`delete` with a fence read the
 *   lock slot key (`keys.lock(ns, key)`) in the same snapshot as the entry, call
 *   it, and add the compares it returns to their transaction;
 * - entries are `record.ts` records under `keys.entry(ns, key)` (a lease is an
 *   entry of kind 'lease' whose value is coord's LeaseDocument); versions are
 *   `version.ts` tokens of the key's mod_revision;
 * - every write transaction goes through `calls.txn` with a request id
 *   (`newRequest` below), so a resend applies once.
 */
import type { CoordLimits, FenceRef, Operation, OpResult } from '@parley/coord';
import type { Clock } from '@parley/interface';
import type { ICompare, IKeyValue } from 'etcd3';
import type { CleanupLeases } from './cleanup.js';
import type { KeyLayout } from './keys.js';
import type { CallBound, EtcdCalls } from './txn.js';

/** Bounds of one operation: its absolute deadline (blocking wait included) and that wait. */
export interface OpCall extends CallBound {
  /** The part of the bound a blocking lock wait may hold (already inside `deadlineMs`). */
  waitMs: number;
}

/**
 * Checks a write's fence against the lock slot as read (`lockKv`, undefined
 * when the slot key is absent) with coord's rules — slot unknown or a newer
 * fence granted: `fence_stale`; a fence never granted: `invalid_argument` —
 * and returns the compares that make the transaction fail if the slot
 * changes before it commits (the lock key's mod_revision).
 */
export type FenceCheck = (fence: FenceRef, lockKv: IKeyValue | undefined) => ICompare[];

/** The shared state of one backend, handed to every operation module. */
export interface EtcdContext {
  readonly calls: EtcdCalls;
  readonly keys: KeyLayout;
  readonly cleanup: CleanupLeases;
  readonly limits: Readonly<CoordLimits>;
  readonly clock: Clock;
  /** Largest entry record decoded (value limit plus record overhead). */
  readonly maxRecordBytes: number;
  readonly checkFence: FenceCheck;
}

/** One operation module's entry point. */
export type OpHandler = (ctx: EtcdContext, op: Operation, call: OpCall) => Promise<OpResult>;

/** A request id with its cleanup lease, for `calls.txn({ request })`. */
export interface NewRequest {
  id: string;
  leaseId: string;
}

/** How long a request record is kept after its call's deadline (retries within the call find it). */
export const REQUEST_RECORD_GRACE_MS = 60_000;

/** A request id whose record outlives the call (its deadline plus a grace). */
export async function newRequest(ctx: EtcdContext, call: OpCall): Promise<NewRequest> {
  const leaseId = await ctx.cleanup.leaseUntil(call.deadlineMs + REQUEST_RECORD_GRACE_MS, call);
  return { id: ctx.calls.newRequestId(leaseId), leaseId };
}
