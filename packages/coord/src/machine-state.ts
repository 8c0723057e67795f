/** The state of a CoordStateMachine, and the small helpers every operation module shares. */
import type { ParleyError } from '@parley/interface';
import { type JsonValue, utf8Length } from './json.js';
import type { CommandResult, CoordLimits, Delivery, EntryKind, ErrorPayload, OpResult } from './types.js';

/** An entry as stored (namespace and key are its map coordinates). */
export interface StoredEntry {
  kind: EntryKind;
  value: JsonValue;
  valueBytes: number;
  version: string;
  ttlSeconds: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

export interface LockHolder {
  owner: string;
  fence: number;
  acquiredAt: number;
  expiresAt: number;
  ttlSeconds: number;
  metadata: JsonValue;
}

export interface LockWaiter {
  owner: string;
  ttlSeconds: number;
  metadata: JsonValue;
  enqueuedAt: number;
  waitDeadlineAt: number;
  clientId: string;
  seq: number;
}

export interface LockSlot {
  holder: LockHolder | null;
  lastFence: number;
  /** When the slot last became free (meaningful while holder is null). */
  freeSince: number;
  waiters: LockWaiter[];
}

export interface CachedResult {
  result: CommandResult;
  bytes: number;
}

export interface Session {
  /** Every seq ≤ floorSeq that is not in `results` is stale. */
  floorSeq: number;
  lastActiveMs: number;
  results: Map<number, CachedResult>;
}

/** Largest command stamp accepted: the end of the ECMAScript time range (year 275760). */
export const MAX_TIME_MS = 8_640_000_000_000_000;

/**
 * UTF-8 size of a value the state machine built from JSON: the same as its
 * canonical size (key order does not change the length), without sorting.
 */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value));
}

export function errorPayload(err: ParleyError): ErrorPayload {
  return { code: err.code, message: err.message, details: { ...err.details } };
}

export function ok(value: OpResult): CommandResult {
  return { ok: true, value };
}

export function fail(err: ParleyError): CommandResult {
  return { ok: false, error: errorPayload(err) };
}

export function lockName(namespace: string, key: string): string {
  return `${namespace}/${key}`;
}

/**
 * Everything a CoordStateMachine holds: the replicated state (time, log
 * position, entries, lock slots, sessions) and the context of the command
 * being applied. The operation modules (entries, leases, locks, sessions,
 * expiry, snapshot) are functions over it.
 */
export class Machine {
  /** State-machine time (see CoordStateMachine.timeMs). */
  nowMs = 0;
  lastIndex = 0;
  lastTerm = 0;
  namespaces = new Map<string, Map<string, StoredEntry>>();
  locks = new Map<string, Map<string, LockSlot>>();
  /** In least-recently-used-first order. */
  sessions = new Map<string, Session>();
  cachedBytes = 0;
  /**
   * A lower bound on every deadline the expire command acts on (entry
   * expiry, lock expiry, waiter timeout, idle-slot retention, session
   * expiry), so an expire with nothing due costs O(1). Derived state: not in
   * snapshots; a restored replica starts at -Infinity and scans once.
   */
  nextDueMs = Number.POSITIVE_INFINITY;

  // Per-apply context.
  /**
   * The time new deadlines and timestamps of the command being applied count
   * from: its stamp, or state-machine time when that is later. State-machine
   * time (`nowMs`) judges expiry and may lag the clocks after a leaderless
   * stretch; counting a new grant from it would put the grant's deadline in
   * the past in real time.
   */
  stampMs = 0;
  index = 0;
  term = 0;
  deliveries: Delivery[] = [];
  /** Live keys the command removed by delete_namespace, in key order. */
  removedKeys: string[] = [];

  constructor(
    readonly limits: Readonly<CoordLimits>,
    readonly versionKey: string,
  ) {}

  /** Lowers nextDueMs to `ms`. */
  due(ms: number): void {
    if (ms < this.nextDueMs) this.nextDueMs = ms;
  }
}
