/** Node results as the HTTP API spells them: snake_case fields, ISO times. */
import type { EventualEntry, LeaseView, LockGrant, LockInfo, StrongEntry } from '@parley/node';
import { isoMicros } from './time.js';

export interface WireEntry {
  namespace: string;
  key: string;
  value: unknown;
  ttl_seconds: number;
  version: string;
  created_at: string;
  updated_at: string;
  expires_at: string;
  operation?: 'created' | 'updated';
}

export function wireEntry(entry: StrongEntry | EventualEntry, operation?: 'created' | 'updated'): WireEntry {
  const out: WireEntry = {
    namespace: entry.namespace,
    key: entry.key,
    value: entry.value,
    ttl_seconds: entry.ttlSeconds,
    version: entry.version,
    created_at: isoMicros(entry.createdAt),
    updated_at: isoMicros(entry.updatedAt),
    expires_at: isoMicros(entry.expiresAt),
  };
  if (operation !== undefined) out.operation = operation;
  return out;
}

export function wireLock(grant: LockGrant) {
  return {
    namespace: grant.namespace,
    key: grant.key,
    owner: grant.owner,
    fence: grant.fence,
    ttl_seconds: grant.ttlSeconds,
    acquired_at: isoMicros(grant.acquiredAt),
    expires_at: isoMicros(grant.expiresAt),
    metadata: grant.metadata,
  };
}

export function wireLockInfo(info: LockInfo) {
  return {
    namespace: info.namespace,
    key: info.key,
    held: info.holder !== null,
    holder: info.holder === null ? null : wireLock(info.holder),
    last_fence: info.lastFence,
    waiters: info.waiters,
  };
}

export function wireLease(view: LeaseView) {
  return {
    namespace: view.namespace,
    key: view.key,
    epoch: view.epoch,
    holder: view.holder,
    deadline_at: isoMicros(view.deadlineAt),
    state: view.state,
    version: view.version,
    ttl_seconds: view.ttlSeconds,
  };
}
