/**
 * Fenced locks on etcd: lock_acquire (with FIFO waits), lock_renew,
 * lock_release, lock_inspect and lock_list, with the results, errors and
 * codes of coord's state machine (packages/coord/src/locks.ts). Records and
 * their reading: lock-records.ts; reads and grant transactions: lock-io.ts;
 * the blocking wait: lock-wait.ts; the check of fenced entry writes: fence.ts.
 *
 * FOR docs/guarantees.md ("On etcd") — what holds and where it differs:
 * - Fences are etcd revisions (a grant decided on a read at revision R takes
 *   max(R + 1, lastFence + 1) and commits only if the slot is unchanged), so
 *   they strictly increase per lock across members, crashes and etcd leader
 *   changes. They are not consecutive and do not start at 1.
 * - Expiry is judged by deadlines stored in the records (ms on the calling
 *   node's clock), never by etcd leases: etcd's lease TTL reset on a leader
 *   change (etcd issue 9888) neither extends nor resets anyone's remaining
 *   time; etcd leases only delete dead records later. The skew bound ε of
 *   guarantees.md applies between the clocks of all Parley nodes that use the
 *   etcd cluster (each call judges time by its own node's clock), not only
 *   between Raft voters; there is no maxTimeStepMs clamp.
 * - FIFO: blocking waiters queue as keys ordered by create_revision (etcd's
 *   lock recipe). A released lock passes to the first waiter in the release's
 *   own transaction; an expired holder's lock passes when the first waiter
 *   (or any other call on the lock) next looks, which each waiter schedules
 *   for the holder's deadline — within one read of it, or POLL_MS (1 s) if
 *   its watch is down. Until then a fenced write by the expired holder still
 *   passes (no newer holder exists yet); on the built-in backend the leader's
 *   next `expire` (every second) hands the lock on.
 * - A blocking acquire never answers `lock_waiting`: it resolves with the grant
 *   or fails `lock_held` once its wait ends (as through the node's Raft
 *   backend). A waiter that gives up deletes its key; if the call cannot reach
 *   etcd it fails `timeout`/`unavailable` within its bound and its key counts
 *   as given up at its wait deadline.
 * - lock_inspect counts only waiters still waiting; lock_list reads every slot
 *   and waiter of the namespace at one revision (paged, bounded).
 * - maxLocksPerNamespace and maxWaitersPerLock hold exactly for waiters (the
 *   enqueue compares that no waiter was queued since its read) and
 *   approximately for slots (a count before creating; concurrent creations of
 *   distinct slots can pass it together).
 */

import type { LockInfo, Operation, OpResult } from '@parley/coord';
import {
  checkFenceToken,
  checkId,
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkValue,
  lockName,
} from '@parley/coord/shared';
import {
  FenceStaleError,
  InvalidArgumentError,
  LockHeldError,
  LockLostError,
  NamespaceFullError,
} from '@parley/interface';
import type { ICompare, IKeyValue, IRequestOp } from 'etcd3';
import type { EtcdContext, OpCall, OpHandler } from './context.js';
import { newRequest } from './context.js';
import { escapeSegment, prefixEnd, unescapeSegment } from './keys.js';
import {
  asJson,
  commit,
  contention,
  decodeSlotKv,
  decodeWaiterKv,
  grantToWaiter,
  heldError,
  MAX_LOCK_ROUNDS,
  nextFence,
  noNewWaiter,
  putSlot,
  readLock,
  settledLock,
  slotUnchanged,
  sweepWaiters,
} from './lock-io.js';
import {
  encodeWaiter,
  grantView,
  type HolderRecord,
  type LockSnapshot,
  type LockState,
  lockInfoOf,
  lockState,
  type WaiterKv,
} from './lock-records.js';
import { waitForGrant } from './lock-wait.js';

/** Keys per page of a namespace-wide lock scan. */
const SCAN_PAGE = 500;

type Op<T extends Operation['type']> = Extract<Operation, { type: T }>;

async function lockAcquire(ctx: EtcdContext, op: Op<'lock_acquire'>, call: OpCall): Promise<OpResult> {
  const { limits } = ctx;
  const namespace = checkNamespace(limits, op.namespace);
  const key = checkKey(limits, op.key);
  const owner = checkId(limits, 'owner', op.owner);
  const ttlSeconds =
    op.ttlSeconds === undefined
      ? limits.defaultLockTtlSeconds
      : checkIntInRange('ttlSeconds', op.ttlSeconds, 1, limits.maxLockTtlSeconds);
  const metadata = op.metadata === undefined ? null : checkValue(op.metadata, limits.maxLockMetadataBytes).value;
  const waitSeconds =
    op.waitSeconds === undefined ? 0 : checkIntInRange('waitSeconds', op.waitSeconds, 0, limits.maxLockWaitSeconds);
  let request = await newRequest(ctx, call);
  // The waiter key is named after the call's first request id: a resent enqueue finds its own key.
  const waiterId = request.id;
  const waiterKey = Buffer.concat([ctx.keys.lockWaiters(namespace, key), Buffer.from(waiterId, 'utf8')]);
  for (let round = 0; round < MAX_LOCK_ROUNDS; round++) {
    const { snapshot, state, now } = await settledLock(ctx, namespace, key, call);
    const queued = snapshot.waiters.find((w) => w.id === waiterId);
    if (queued) return waitForGrant(ctx, namespace, key, waiterId, queued.createRevision, call);
    if (!state.holder) {
      if (!snapshot.slotKv) await ensureLockRoom(ctx, namespace, call);
      const fence = nextFence(snapshot);
      const holder: HolderRecord = {
        owner,
        fence,
        acquiredAt: now,
        expiresAt: now + ttlSeconds * 1000,
        ttlSeconds,
        metadata,
      };
      const result: OpResult = { type: 'lock', lock: grantView(namespace, key, holder) };
      const slot = { holder, lastFence: fence, freeSince: snapshot.slot?.freeSince ?? now };
      const out = await commit(
        ctx,
        {
          compares: [slotUnchanged(ctx, namespace, key, snapshot), noNewWaiter(ctx, namespace, key, snapshot)],
          success: [await putSlot(ctx, namespace, key, slot, now, call), ...sweepWaiters(state)],
          request: { ...request, result: asJson(result) },
        },
        call,
      );
      if (out.replayed) return out.replayed.result as unknown as OpResult;
      if (out.succeeded) return result;
      if (out.leaseLost) request = await newRequest(ctx, call);
      continue;
    }
    if (waitSeconds === 0 || state.live.length >= limits.maxWaitersPerLock) throw heldError(namespace, key, state);
    const waitDeadlineAt = now + waitSeconds * 1000;
    const lease = await ctx.cleanup.leaseUntil(waitDeadlineAt, call);
    const out = await commit(
      ctx,
      {
        compares: [
          slotUnchanged(ctx, namespace, key, snapshot),
          noNewWaiter(ctx, namespace, key, snapshot),
          { key: waiterKey, target: 'Create', result: 'Equal', create_revision: 0 },
        ],
        success: [
          {
            request_put: {
              key: waiterKey,
              value: encodeWaiter({ owner, ttlSeconds, metadata, enqueuedAt: now, waitDeadlineAt, granted: null }),
              lease,
            },
          },
          ...sweepWaiters(state),
        ],
      },
      call,
    );
    if (out.succeeded) return waitForGrant(ctx, namespace, key, waiterId, out.revision, call);
  }
  throw contention(namespace, key);
}

/**
 * coord's heldBy: the live holder matching (owner, fence), or the error explaining why not —
 * `fence_stale` (a newer grant), `lock_held` (someone else holds it), `lease_lost` (nobody does).
 */
function heldBy(namespace: string, key: string, state: LockState, owner: string, fence: number): HolderRecord {
  if (fence < state.lastFence) throw new FenceStaleError(lockName(namespace, key), fence, state.lastFence);
  const h = state.holder;
  if (!h) throw new LockLostError(lockName(namespace, key), owner, fence);
  if (h.fence !== fence || h.owner !== owner) throw new LockHeldError(lockName(namespace, key), h.owner, h.expiresAt);
  return h;
}

async function lockRenew(ctx: EtcdContext, op: Op<'lock_renew'>, call: OpCall): Promise<OpResult> {
  const { limits } = ctx;
  const namespace = checkNamespace(limits, op.namespace);
  const key = checkKey(limits, op.key);
  const owner = checkId(limits, 'owner', op.owner);
  const fence = checkFenceToken(op.fence);
  const ttl =
    op.ttlSeconds === undefined ? undefined : checkIntInRange('ttlSeconds', op.ttlSeconds, 1, limits.maxLockTtlSeconds);
  let request = await newRequest(ctx, call);
  for (let round = 0; round < MAX_LOCK_ROUNDS; round++) {
    const { snapshot, state, now } = await settledLock(ctx, namespace, key, call);
    const h = heldBy(namespace, key, state, owner, fence);
    const ttlSeconds = ttl ?? h.ttlSeconds;
    const holder: HolderRecord = { ...h, ttlSeconds, expiresAt: now + ttlSeconds * 1000 };
    const result: OpResult = { type: 'lock', lock: grantView(namespace, key, holder) };
    const slot = { ...(snapshot.slot as NonNullable<LockSnapshot['slot']>), holder };
    const out = await commit(
      ctx,
      {
        compares: [slotUnchanged(ctx, namespace, key, snapshot)],
        success: [await putSlot(ctx, namespace, key, slot, now, call)],
        request: { ...request, result: asJson(result) },
      },
      call,
    );
    if (out.replayed) return out.replayed.result as unknown as OpResult;
    if (out.succeeded) return result;
    if (out.leaseLost) request = await newRequest(ctx, call);
  }
  throw contention(namespace, key);
}

async function lockRelease(ctx: EtcdContext, op: Op<'lock_release'>, call: OpCall): Promise<OpResult> {
  const { limits } = ctx;
  const namespace = checkNamespace(limits, op.namespace);
  const key = checkKey(limits, op.key);
  const owner = checkId(limits, 'owner', op.owner);
  const fence = checkFenceToken(op.fence);
  let request = await newRequest(ctx, call);
  const released: OpResult = { type: 'lock_released', released: true };
  for (let round = 0; round < MAX_LOCK_ROUNDS; round++) {
    const { snapshot, state, now } = await settledLock(ctx, namespace, key, call);
    const h = state.holder;
    // Not (or no longer) the holder: a retried or late release never frees a newer holder.
    if (!h || h.owner !== owner || h.fence !== fence) return { type: 'lock_released', released: false };
    const first: WaiterKv | undefined = state.live[0];
    let spec: { compares: ICompare[]; success: IRequestOp[] };
    if (first) {
      spec = await grantToWaiter(ctx, namespace, key, snapshot, state, first, now, call, now);
    } else {
      const slot = { holder: null, lastFence: state.lastFence || h.fence, freeSince: now };
      spec = {
        compares: [slotUnchanged(ctx, namespace, key, snapshot)],
        success: [await putSlot(ctx, namespace, key, slot, now, call), ...sweepWaiters(state)],
      };
    }
    const out = await commit(
      ctx,
      { compares: spec.compares, success: spec.success, request: { ...request, result: asJson(released) } },
      call,
    );
    if (out.replayed) return out.replayed.result as unknown as OpResult;
    if (out.succeeded) return released;
    if (out.leaseLost) request = await newRequest(ctx, call);
  }
  throw contention(namespace, key);
}

async function lockInspect(ctx: EtcdContext, op: Op<'lock_inspect'>, call: OpCall): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const key = checkKey(ctx.limits, op.key);
  const s = await readLock(ctx, namespace, key, call);
  return { type: 'lock_info', lock: lockInfoOf(namespace, key, lockState(s, ctx.clock.nowMs(), ctx.limits)) };
}

/** Every key-value under `prefix` at one revision, a page at a time (the revision of the first page). */
async function scan(
  ctx: EtcdContext,
  prefix: Buffer,
  call: OpCall,
  revision: number | undefined,
  visit: (kv: IKeyValue) => void,
): Promise<number> {
  const end = prefixEnd(prefix);
  let from = prefix;
  let rev = revision;
  for (;;) {
    const res = await ctx.calls.range(
      { key: from, range_end: end, limit: SCAN_PAGE, ...(rev === undefined ? {} : { revision: rev }) },
      call,
    );
    if (rev === undefined) rev = Number(res.header.revision);
    for (const kv of res.kvs) visit(kv);
    const last = res.kvs.at(-1);
    if (!res.more || !last) return rev;
    from = Buffer.concat([last.key, Buffer.from([0])]);
  }
}

async function lockList(ctx: EtcdContext, op: Op<'lock_list'>, call: OpCall): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const slotsPrefix = ctx.keys.namespaceLocks(namespace);
  const waitersPrefix = Buffer.from(`${ctx.keys.prefix}/w/${escapeSegment(namespace)}/`, 'utf8');
  const byKey = new Map<string, LockSnapshot>();
  const snapshotOf = (key: string, revision: number): LockSnapshot => {
    let s = byKey.get(key);
    if (!s) {
      s = { revision, slotKv: undefined, slot: undefined, waiters: [] };
      byKey.set(key, s);
    }
    return s;
  };
  const revision = await scan(ctx, slotsPrefix, call, undefined, (kv) => {
    const key = nameAfter(kv.key, slotsPrefix.length);
    if (key === undefined) return;
    const s = snapshotOf(key, 0);
    s.slotKv = kv;
    s.slot = decodeSlotKv(kv, ctx.limits);
  });
  await scan(ctx, waitersPrefix, call, revision, (kv) => {
    const rest = kv.key.subarray(waitersPrefix.length).toString('utf8');
    const slash = rest.lastIndexOf('/');
    if (slash <= 0) return;
    const key = unescapeOrUndefined(rest.slice(0, slash));
    if (key === undefined) return;
    snapshotOf(key, revision).waiters.push(decodeWaiterKv(kv, waitersPrefix.length + slash + 1, ctx.limits));
  });
  const now = ctx.clock.nowMs();
  const live: LockInfo[] = [];
  for (const key of [...byKey.keys()].sort()) {
    const s = byKey.get(key) as LockSnapshot;
    s.waiters.sort((a, b) => a.createRevision - b.createRevision);
    const info = lockInfoOf(namespace, key, lockState(s, now, ctx.limits));
    if (info.holder !== null || info.waiters > 0) live.push(info);
  }
  const max = ctx.limits.maxListLimit;
  return { type: 'lock_list', locks: live.slice(0, max), truncated: live.length > max };
}

function unescapeOrUndefined(text: string): string | undefined {
  try {
    return unescapeSegment(text);
  } catch {
    return undefined;
  }
}

function nameAfter(raw: Buffer, prefixLength: number): string | undefined {
  return unescapeOrUndefined(raw.subarray(prefixLength).toString('utf8'));
}

/** coord's bound on lock slots per namespace: slots forgotten by their own deadlines do not count. */
async function ensureLockRoom(ctx: EtcdContext, namespace: string, call: OpCall): Promise<void> {
  const max = ctx.limits.maxLocksPerNamespace;
  const prefix = ctx.keys.namespaceLocks(namespace);
  const counted = await ctx.calls.range({ key: prefix, range_end: prefixEnd(prefix), count_only: true }, call);
  if (Number(counted.count) < max) return;
  const now = ctx.clock.nowMs();
  let remembered = 0;
  await scan(ctx, prefix, call, undefined, (kv) => {
    const slot = decodeSlotKv(kv, ctx.limits);
    const st = lockState({ revision: 0, slotKv: kv, slot, waiters: [] }, now, ctx.limits);
    if (st.holder || st.lastFence > 0) remembered++;
  });
  if (remembered >= max) throw new NamespaceFullError(namespace, max);
}

/** The handler of lock_acquire, lock_renew, lock_release, lock_inspect and lock_list. */
export const lockOperation: OpHandler = (ctx, op, call) => {
  switch (op.type) {
    case 'lock_acquire':
      return lockAcquire(ctx, op, call);
    case 'lock_renew':
      return lockRenew(ctx, op, call);
    case 'lock_release':
      return lockRelease(ctx, op, call);
    case 'lock_inspect':
      return lockInspect(ctx, op, call);
    case 'lock_list':
      return lockList(ctx, op, call);
    default:
      return Promise.reject(new InvalidArgumentError(`'${op.type}' is not a lock operation`));
  }
};
