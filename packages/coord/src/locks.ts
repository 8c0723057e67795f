/**
 * Fenced locks: slots with a holder, a last fence and a FIFO queue of blocking
 * waiters; acquire, renew, release, inspect and list; and the fence check of
 * fenced entry writes. Every walk over slots that emits deliveries goes in
 * key order, so replicas restored from snapshots emit the same output.
 */
import {
  FenceStaleError,
  InvalidArgumentError,
  LockHeldError,
  LockLostError,
  NamespaceFullError,
} from '@parley/interface';
import { fail, type LockHolder, type LockSlot, type LockWaiter, lockName, type Machine, ok } from './machine-state.js';
import { deliver } from './sessions.js';
import type { FenceRef, LockGrant, LockInfo, Operation, OpResult } from './types.js';
import { checkFenceToken, checkId, checkIntInRange, checkKey, checkNamespace, checkValue } from './validate.js';

export function findSlot(s: Machine, namespace: string, key: string): LockSlot | undefined {
  return s.locks.get(namespace)?.get(key);
}

export function dropSlot(s: Machine, namespace: string, key: string): void {
  const slots = s.locks.get(namespace);
  if (!slots) return;
  slots.delete(key);
  if (slots.size === 0) s.locks.delete(namespace);
}

export function grantFence(s: Machine, slot: LockSlot): number {
  return Math.max(slot.lastFence + 1, s.index);
}

/**
 * Brings a lock slot up to the current time: auto-releases an expired
 * holder, hands the lock to the first waiter whose wait has not ended by now
 * (one waiter per call), times out waiters whose wait has ended, and
 * forgets a slot free for longer than the retention. Returns the slot, or
 * undefined if it is (now) gone.
 */
export function normalizedSlot(s: Machine, namespace: string, key: string): LockSlot | undefined {
  const slot = findSlot(s, namespace, key);
  if (!slot) return undefined;
  const now = s.nowMs;
  if (slot.holder && slot.holder.expiresAt <= now) {
    slot.freeSince = slot.holder.expiresAt;
    slot.holder = null;
  }
  if (!slot.holder) {
    while (slot.waiters.length > 0) {
      const w = slot.waiters.shift() as LockWaiter;
      // Judged against now, not freeSince: a waiter whose wait has ended has given up,
      // and granting it would leave a ghost holder for a whole lock TTL.
      if (w.waitDeadlineAt <= now) {
        deliver(s, w.clientId, w.seq, fail(waitTimeout(namespace, key, slot)));
        continue;
      }
      const fence = grantFence(s, slot);
      slot.holder = {
        owner: w.owner,
        fence,
        acquiredAt: s.stampMs,
        expiresAt: s.stampMs + w.ttlSeconds * 1000,
        ttlSeconds: w.ttlSeconds,
        metadata: w.metadata,
      };
      slot.lastFence = fence;
      deliver(s, w.clientId, w.seq, ok({ type: 'lock', lock: grantView(namespace, key, slot.holder) }));
      break;
    }
  }
  if (slot.holder) {
    const kept: LockWaiter[] = [];
    for (const w of slot.waiters) {
      if (w.waitDeadlineAt <= now) deliver(s, w.clientId, w.seq, fail(waitTimeout(namespace, key, slot)));
      else kept.push(w);
    }
    slot.waiters = kept;
  }
  if (!slot.holder && slot.waiters.length === 0 && slot.freeSince + s.limits.idleLockRetentionSeconds * 1000 <= now) {
    dropSlot(s, namespace, key);
    return undefined;
  }
  dueSlot(s, slot);
  return slot;
}

/** Lowers nextDueMs to the slot's earliest deadline. */
export function dueSlot(s: Machine, slot: LockSlot): void {
  if (slot.holder) s.due(slot.holder.expiresAt);
  else s.due(slot.freeSince + s.limits.idleLockRetentionSeconds * 1000);
  for (const w of slot.waiters) s.due(w.waitDeadlineAt);
}

export function waitTimeout(namespace: string, key: string, slot: LockSlot): LockHeldError {
  return new LockHeldError(lockName(namespace, key), slot.holder?.owner ?? '', slot.holder?.expiresAt ?? 0);
}

export function grantView(namespace: string, key: string, h: LockHolder): LockGrant {
  return {
    namespace,
    key,
    owner: h.owner,
    fence: h.fence,
    acquiredAt: h.acquiredAt,
    expiresAt: h.expiresAt,
    ttlSeconds: h.ttlSeconds,
    metadata: h.metadata,
  };
}

export function lockInfo(namespace: string, key: string, slot: LockSlot | undefined, now: number): LockInfo {
  const holder = slot?.holder && slot.holder.expiresAt > now ? grantView(namespace, key, slot.holder) : null;
  return { namespace, key, holder, lastFence: slot?.lastFence ?? 0, waiters: slot?.waiters.length ?? 0 };
}

export function readLockList(s: Machine, ns: string, now: number): OpResult {
  const namespace = checkNamespace(s.limits, ns);
  const slots = s.locks.get(namespace);
  const keys = slots ? [...slots.keys()].sort() : [];
  const live = keys
    .map((key) => lockInfo(namespace, key, slots?.get(key), now))
    .filter((l) => l.holder !== null || l.waiters > 0);
  const max = s.limits.maxListLimit;
  return { type: 'lock_list', locks: live.slice(0, max), truncated: live.length > max };
}

export function lockAcquire(
  s: Machine,
  op: Extract<Operation, { type: 'lock_acquire' }>,
  clientId: string | undefined,
  seq: number | undefined,
): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const owner = checkId(s.limits, 'owner', op.owner);
  const ttlSeconds =
    op.ttlSeconds === undefined
      ? s.limits.defaultLockTtlSeconds
      : checkIntInRange('ttlSeconds', op.ttlSeconds, 1, s.limits.maxLockTtlSeconds);
  const metadata = op.metadata === undefined ? null : checkValue(op.metadata, s.limits.maxLockMetadataBytes).value;
  const waitSeconds =
    op.waitSeconds === undefined ? 0 : checkIntInRange('waitSeconds', op.waitSeconds, 0, s.limits.maxLockWaitSeconds);
  if (waitSeconds > 0 && (clientId === undefined || seq === undefined)) {
    throw new InvalidArgumentError('a blocking acquire (waitSeconds > 0) needs a client session');
  }
  const now = s.nowMs;
  let slot = normalizedSlot(s, namespace, key);
  if (slot?.holder) {
    if (waitSeconds === 0) throw new LockHeldError(lockName(namespace, key), slot.holder.owner, slot.holder.expiresAt);
    if (slot.waiters.length >= s.limits.maxWaitersPerLock) {
      throw new LockHeldError(lockName(namespace, key), slot.holder.owner, slot.holder.expiresAt);
    }
    const waitDeadlineAt = s.stampMs + waitSeconds * 1000;
    slot.waiters.push({
      owner,
      ttlSeconds,
      metadata,
      enqueuedAt: s.stampMs,
      waitDeadlineAt,
      clientId: clientId as string,
      seq: seq as number,
    });
    s.due(waitDeadlineAt);
    return { type: 'lock_waiting', namespace, key, position: slot.waiters.length, waitDeadlineAt };
  }
  if (!slot) {
    let slots = s.locks.get(namespace);
    if (slots && slots.size >= s.limits.maxLocksPerNamespace) {
      for (const k of [...slots.keys()].sort()) normalizedSlot(s, namespace, k);
      slots = s.locks.get(namespace);
      if (slots && slots.size >= s.limits.maxLocksPerNamespace) {
        throw new NamespaceFullError(namespace, s.limits.maxLocksPerNamespace);
      }
    }
    if (!slots) {
      slots = new Map();
      s.locks.set(namespace, slots);
    }
    slot = { holder: null, lastFence: 0, freeSince: now, waiters: [] };
    slots.set(key, slot);
  }
  const fence = grantFence(s, slot);
  slot.holder = {
    owner,
    fence,
    acquiredAt: s.stampMs,
    expiresAt: s.stampMs + ttlSeconds * 1000,
    ttlSeconds,
    metadata,
  };
  slot.lastFence = fence;
  s.due(slot.holder.expiresAt);
  return { type: 'lock', lock: grantView(namespace, key, slot.holder) };
}

/**
 * The live holder matching (owner, fence), or the error explaining why not: `fence_stale` when a
 * newer grant exists, `lock_held` (naming the holder) when someone else holds the lock, and
 * `lease_lost` when nobody does (this grant expired or was released, or never existed).
 */
export function heldBy(
  s: Machine,
  namespace: string,
  key: string,
  owner: string,
  fence: number,
): { slot: LockSlot; holder: LockHolder } {
  const slot = normalizedSlot(s, namespace, key);
  if (slot && fence < slot.lastFence) throw new FenceStaleError(lockName(namespace, key), fence, slot.lastFence);
  const holder = slot?.holder;
  if (!slot || !holder) throw new LockLostError(lockName(namespace, key), owner, fence);
  if (holder.fence !== fence || holder.owner !== owner) {
    throw new LockHeldError(lockName(namespace, key), holder.owner, holder.expiresAt);
  }
  return { slot, holder };
}

export function lockRenew(s: Machine, op: Extract<Operation, { type: 'lock_renew' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const owner = checkId(s.limits, 'owner', op.owner);
  const fence = checkFenceToken(op.fence);
  const ttl =
    op.ttlSeconds === undefined
      ? undefined
      : checkIntInRange('ttlSeconds', op.ttlSeconds, 1, s.limits.maxLockTtlSeconds);
  const { holder } = heldBy(s, namespace, key, owner, fence);
  const ttlSeconds = ttl ?? holder.ttlSeconds;
  holder.ttlSeconds = ttlSeconds;
  holder.expiresAt = s.stampMs + ttlSeconds * 1000;
  s.due(holder.expiresAt);
  return { type: 'lock', lock: grantView(namespace, key, holder) };
}

export function lockRelease(s: Machine, op: Extract<Operation, { type: 'lock_release' }>): OpResult {
  const namespace = checkNamespace(s.limits, op.namespace);
  const key = checkKey(s.limits, op.key);
  const owner = checkId(s.limits, 'owner', op.owner);
  const fence = checkFenceToken(op.fence);
  const slot = normalizedSlot(s, namespace, key);
  if (!slot?.holder || slot.holder.owner !== owner || slot.holder.fence !== fence) {
    // Not (or no longer) the holder: a retried or late release never frees a newer holder.
    return { type: 'lock_released', released: false };
  }
  slot.holder = null;
  slot.freeSince = s.nowMs;
  normalizedSlot(s, namespace, key);
  return { type: 'lock_released', released: true };
}

export function checkFence(s: Machine, fence: FenceRef | undefined): void {
  if (fence === undefined) return;
  if (fence === null || typeof fence !== 'object') throw new InvalidArgumentError('fence must be an object');
  const namespace = checkNamespace(s.limits, fence.namespace);
  const key = checkKey(s.limits, fence.key);
  const token = checkFenceToken(fence.token);
  const slot = normalizedSlot(s, namespace, key);
  if (!slot) throw new FenceStaleError(lockName(namespace, key), token, 0);
  if (token > slot.lastFence) {
    throw new InvalidArgumentError(`fence ${token} was never granted on '${lockName(namespace, key)}'`, {
      fence: token,
      lastFence: slot.lastFence,
    });
  }
  if (token < slot.lastFence) throw new FenceStaleError(lockName(namespace, key), token, slot.lastFence);
}
