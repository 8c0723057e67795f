/** The leader-proposed expire command: collects what fell due, in a replica-independent order. */
import { normalizedSlot } from './locks.js';
import type { LockSlot, Machine } from './machine-state.js';
import { dropSession } from './sessions.js';
import type { OpResult } from './types.js';

export function expire(s: Machine): OpResult {
  const now = s.nowMs;
  if (now < s.nextDueMs) return { type: 'expired', entries: 0, locks: 0, waiters: 0, sessions: 0 };
  // Full scan; recompute the bound from what remains.
  s.nextDueMs = Number.POSITIVE_INFINITY;
  let entries = 0;
  for (const [namespace, map] of [...s.namespaces]) {
    for (const [key, e] of map) {
      if (e.expiresAt <= now) {
        map.delete(key);
        entries++;
      } else s.due(e.expiresAt);
    }
    if (map.size === 0) s.namespaces.delete(namespace);
  }
  let locks = 0;
  let waiters = 0;
  // Key order, not insertion order: a replica restored from a snapshot holds the same slots in
  // another insertion order, and the deliveries this loop emits must come out identical.
  for (const namespace of [...s.locks.keys()].sort()) {
    const slots = s.locks.get(namespace) as Map<string, LockSlot>;
    for (const key of [...slots.keys()].sort()) {
      const before = s.deliveries.length;
      const slot = slots.get(key) as LockSlot;
      const hadExpiredHolder = slot.holder !== null && slot.holder.expiresAt <= now;
      normalizedSlot(s, namespace, key);
      if (hadExpiredHolder) locks++;
      for (let i = before; i < s.deliveries.length; i++) {
        if (!s.deliveries[i]?.result.ok) waiters++;
      }
    }
  }
  let sessions = 0;
  const ttlMs = s.limits.sessionTtlSeconds * 1000;
  for (const [clientId, session] of [...s.sessions]) {
    if (session.lastActiveMs + ttlMs <= now) {
      dropSession(s, clientId);
      sessions++;
    } else s.due(session.lastActiveMs + ttlMs);
  }
  return { type: 'expired', entries, locks, waiters, sessions };
}
