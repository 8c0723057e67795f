/**
 * What Parley stores for a lock on etcd, and how a reader sees it at a given
 * time. Two kinds of key (keys.ts):
 *
 * - the **slot** `<prefix>/l/<ns>/<key>`: the holder (owner, fence, times,
 *   metadata) or none, the last fence granted and since when the slot is free;
 * - one **waiter** per blocking acquire, `<prefix>/w/<ns>/<key>/<request id>`,
 *   queued in `create_revision` order (etcd's own lock recipe orders its
 *   waiters the same way). A waiter that is handed the lock is marked
 *   `granted` (with its fence) rather than deleted, so the waiting call learns
 *   of the grant even when someone else's transaction made it.
 *
 * Every deadline is a time in ms on the writers' clocks, and decides alone:
 * a holder past `expiresAt` is no holder, a waiter past `waitDeadlineAt` has
 * given up, and a slot free for longer than coord's idle retention is
 * forgotten — whatever etcd's cleanup lease (cleanup.ts) says. Records are
 * canonical JSON; decoding is strict and bounded (DecodeError only).
 */

import type { CoordLimits, LockGrant, LockInfo } from '@parley/coord';
import { canonicalJson, deepFreeze, type JsonValue } from '@parley/coord/shared';
import { DecodeError } from '@parley/interface';
import type { IKeyValue } from 'etcd3';
import { parseJsonBytes } from './record.js';

export const LOCK_RECORD_FORMAT = 1;

export interface HolderRecord {
  owner: string;
  fence: number;
  acquiredAt: number;
  expiresAt: number;
  ttlSeconds: number;
  metadata: JsonValue;
}

export interface SlotRecord {
  holder: HolderRecord | null;
  /** The newest fence granted on this slot. */
  lastFence: number;
  /** When the slot last became free (meaningful while there is no live holder). */
  freeSince: number;
}

export interface WaiterRecord {
  owner: string;
  ttlSeconds: number;
  metadata: JsonValue;
  enqueuedAt: number;
  waitDeadlineAt: number;
  /** Set when the lock was handed to this waiter: its fence and when. */
  granted: { fence: number; acquiredAt: number } | null;
}

/** Room for a record's fields around its metadata. */
const RECORD_OVERHEAD_BYTES = 4096;

export function maxLockRecordBytes(limits: Readonly<CoordLimits>): number {
  return limits.maxLockMetadataBytes + limits.maxIdLength * 4 + RECORD_OVERHEAD_BYTES;
}

export function encodeSlot(r: SlotRecord): Buffer {
  return Buffer.from(
    canonicalJson({ format: LOCK_RECORD_FORMAT, holder: r.holder, lastFence: r.lastFence, freeSince: r.freeSince }),
    'utf8',
  );
}

export function encodeWaiter(r: WaiterRecord): Buffer {
  return Buffer.from(canonicalJson({ format: LOCK_RECORD_FORMAT, ...r }), 'utf8');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function exactFields(o: Record<string, unknown>, fields: readonly string[], what: string): void {
  for (const name of Object.keys(o)) if (!fields.includes(name)) throw new DecodeError(`${what} has field '${name}'`);
  for (const name of fields) if (!Object.hasOwn(o, name)) throw new DecodeError(`${what} lacks '${name}'`);
}

function int(o: Record<string, unknown>, name: string, what: string): number {
  const v = o[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new DecodeError(`${what} ${name} is mistyped`);
  return v;
}

function str(o: Record<string, unknown>, name: string, what: string): string {
  const v = o[name];
  if (typeof v !== 'string' || v.length === 0) throw new DecodeError(`${what} ${name} is mistyped`);
  return v;
}

const HOLDER_FIELDS = ['acquiredAt', 'expiresAt', 'fence', 'metadata', 'owner', 'ttlSeconds'];
const SLOT_FIELDS = ['format', 'freeSince', 'holder', 'lastFence'];
const WAITER_FIELDS = ['enqueuedAt', 'format', 'granted', 'metadata', 'owner', 'ttlSeconds', 'waitDeadlineAt'];

export function decodeSlot(bytes: Uint8Array, maxBytes: number): SlotRecord {
  const o = parseJsonBytes(bytes, maxBytes, 2);
  if (!isObject(o)) throw new DecodeError('lock slot is not an object');
  exactFields(o, SLOT_FIELDS, 'lock slot');
  if (o.format !== LOCK_RECORD_FORMAT) throw new DecodeError(`lock slot format ${String(o.format)} is unknown`);
  let holder: HolderRecord | null = null;
  if (o.holder !== null) {
    const h = o.holder;
    if (!isObject(h)) throw new DecodeError('lock holder is not an object');
    exactFields(h, HOLDER_FIELDS, 'lock holder');
    holder = {
      owner: str(h, 'owner', 'lock holder'),
      fence: int(h, 'fence', 'lock holder'),
      acquiredAt: int(h, 'acquiredAt', 'lock holder'),
      expiresAt: int(h, 'expiresAt', 'lock holder'),
      ttlSeconds: int(h, 'ttlSeconds', 'lock holder'),
      metadata: deepFreeze(h.metadata as JsonValue),
    };
  }
  return { holder, lastFence: int(o, 'lastFence', 'lock slot'), freeSince: int(o, 'freeSince', 'lock slot') };
}

export function decodeWaiter(bytes: Uint8Array, maxBytes: number): WaiterRecord {
  const o = parseJsonBytes(bytes, maxBytes, 2);
  if (!isObject(o)) throw new DecodeError('lock waiter is not an object');
  exactFields(o, WAITER_FIELDS, 'lock waiter');
  if (o.format !== LOCK_RECORD_FORMAT) throw new DecodeError(`lock waiter format ${String(o.format)} is unknown`);
  let granted: WaiterRecord['granted'] = null;
  if (o.granted !== null) {
    const g = o.granted;
    if (!isObject(g)) throw new DecodeError('lock waiter grant is not an object');
    exactFields(g, ['acquiredAt', 'fence'], 'lock waiter grant');
    granted = { fence: int(g, 'fence', 'lock waiter grant'), acquiredAt: int(g, 'acquiredAt', 'lock waiter grant') };
  }
  return {
    owner: str(o, 'owner', 'lock waiter'),
    ttlSeconds: int(o, 'ttlSeconds', 'lock waiter'),
    metadata: deepFreeze(o.metadata as JsonValue),
    enqueuedAt: int(o, 'enqueuedAt', 'lock waiter'),
    waitDeadlineAt: int(o, 'waitDeadlineAt', 'lock waiter'),
    granted,
  };
}

/** A waiter key as read: its record, etcd revisions and id (the request id that queued it). */
export interface WaiterKv {
  key: Buffer;
  id: string;
  createRevision: number;
  modRevision: number;
  record: WaiterRecord;
}

/** One consistent read of a lock: the slot and its waiter keys at etcd revision `revision`. */
export interface LockSnapshot {
  revision: number;
  slotKv: IKeyValue | undefined;
  slot: SlotRecord | undefined;
  /** In create_revision order. */
  waiters: WaiterKv[];
}

/** How a lock looks at time `now`, by coord's rules (see the file comment). */
export interface LockState {
  /** The holder, if one is live at `now`. */
  holder: HolderRecord | null;
  /** The last fence still remembered (0 once the slot is forgotten or was never granted). */
  lastFence: number;
  /** Waiters still waiting at `now`, first in line first. */
  live: WaiterKv[];
  /** Waiters whose wait has ended without a grant: anyone may delete them. */
  stale: WaiterKv[];
  /** Granted waiters whose grant is no longer the holder: their markers may go. */
  spent: WaiterKv[];
}

export function lockState(s: LockSnapshot, now: number, limits: Readonly<CoordLimits>): LockState {
  const slot = s.slot;
  const holder = slot?.holder && slot.holder.expiresAt > now ? slot.holder : null;
  const live: WaiterKv[] = [];
  const stale: WaiterKv[] = [];
  const spent: WaiterKv[] = [];
  for (const w of s.waiters) {
    if (w.record.granted !== null) {
      if (slot?.holder?.fence !== w.record.granted.fence) spent.push(w);
    } else if (w.record.waitDeadlineAt > now) live.push(w);
    else stale.push(w);
  }
  let lastFence = slot?.lastFence ?? 0;
  if (slot && !holder && live.length === 0) {
    const freeSince = slot.holder ? slot.holder.expiresAt : slot.freeSince;
    if (freeSince + limits.idleLockRetentionSeconds * 1000 <= now) lastFence = 0;
  }
  return { holder, lastFence, live, stale, spent };
}

export function grantView(namespace: string, key: string, h: HolderRecord): LockGrant {
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

export function lockInfoOf(namespace: string, key: string, st: LockState): LockInfo {
  return {
    namespace,
    key,
    holder: st.holder ? grantView(namespace, key, st.holder) : null,
    lastFence: st.lastFence,
    waiters: st.live.length,
  };
}
