/** Snapshots: the whole state as canonical bytes, and its strict parser. */
import { DecodeError } from '@parley/interface';
import { decodeSnapshotBody, encodeSnapshotBody, MAX_ENVELOPE_DEPTH } from './codec.js';
import { canonicalJson, deepFreeze, type JsonValue, utf8Length } from './json.js';
import {
  type CachedResult,
  type LockHolder,
  type LockSlot,
  type LockWaiter,
  MAX_TIME_MS,
  type Machine,
  type Session,
  type StoredEntry,
} from './machine-state.js';
import type { CommandResult } from './types.js';

/** The whole state as canonical bytes: identical on every replica at the same applied index. */
export function snapshotBytes(s: Machine): Uint8Array {
  const namespaces = [...s.namespaces.keys()].sort().map((ns) => {
    const map = s.namespaces.get(ns) as Map<string, StoredEntry>;
    return [
      ns,
      [...map.keys()].sort().map((key) => {
        const e = map.get(key) as StoredEntry;
        return [key, e.kind, e.value, e.version, e.ttlSeconds, e.createdAt, e.updatedAt, e.expiresAt];
      }),
    ];
  });
  const locks = [...s.locks.keys()].sort().map((ns) => {
    const slots = s.locks.get(ns) as Map<string, LockSlot>;
    return [
      ns,
      [...slots.keys()].sort().map((key) => {
        const s = slots.get(key) as LockSlot;
        const h = s.holder;
        return [
          key,
          h ? [h.owner, h.fence, h.acquiredAt, h.expiresAt, h.ttlSeconds, h.metadata] : null,
          s.lastFence,
          s.freeSince,
          s.waiters.map((w) => [w.owner, w.ttlSeconds, w.metadata, w.enqueuedAt, w.waitDeadlineAt, w.clientId, w.seq]),
        ];
      }),
    ];
  });
  const sessions = [...s.sessions].map(([id, s]) => [
    id,
    s.floorSeq,
    s.lastActiveMs,
    [...s.results].map(([seq, c]) => [seq, c.result]),
  ]);
  return encodeSnapshotBody({
    nowMs: s.nowMs,
    index: s.lastIndex,
    term: s.lastTerm,
    namespaces,
    locks,
    sessions,
  } as unknown as JsonValue);
}

/** Replaces the whole state with a snapshot's. Throws DecodeError (and changes nothing) on bad bytes. */
export function restoreInto(s: Machine, bytes: Uint8Array): void {
  const body = decodeSnapshotBody(bytes);
  const next = parseSnapshot(body);
  s.nowMs = next.nowMs;
  s.lastIndex = next.index;
  s.lastTerm = next.term;
  s.namespaces = next.namespaces;
  s.locks = next.locks;
  s.sessions = next.sessions;
  s.cachedBytes = next.cachedBytes;
  s.nextDueMs = Number.NEGATIVE_INFINITY;
}

// ------------------------------------------------------------------ snapshot parsing

interface ParsedSnapshot {
  nowMs: number;
  index: number;
  term: number;
  namespaces: Map<string, Map<string, StoredEntry>>;
  locks: Map<string, Map<string, LockSlot>>;
  sessions: Map<string, Session>;
  cachedBytes: number;
}

function need(cond: boolean, what: string): asserts cond {
  if (!cond) throw new DecodeError(`snapshot: bad ${what}`);
}

function isArr(v: unknown, len?: number): v is unknown[] {
  return Array.isArray(v) && (len === undefined || v.length === len);
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

function isStr(v: unknown): v is string {
  return typeof v === 'string';
}

function jsonSize(value: unknown, what: string): number {
  try {
    return utf8Length(canonicalJson(value, MAX_ENVELOPE_DEPTH));
  } catch {
    throw new DecodeError(`snapshot: bad ${what}`);
  }
}

function parseSnapshot(body: unknown): ParsedSnapshot {
  need(body !== null && typeof body === 'object' && !Array.isArray(body), 'body');
  const b = body as Record<string, unknown>;
  const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  need(isCount(b.nowMs) && b.nowMs <= MAX_TIME_MS && isCount(b.index) && isCount(b.term), 'header');
  need(isArr(b.namespaces) && isArr(b.locks) && isArr(b.sessions), 'sections');
  const namespaces = new Map<string, Map<string, StoredEntry>>();
  for (const item of b.namespaces) {
    need(isArr(item, 2) && isStr(item[0]) && isArr(item[1]), 'namespace');
    const map = new Map<string, StoredEntry>();
    for (const row of item[1] as unknown[]) {
      need(isArr(row, 8), 'entry');
      const [key, kind, value, version, ttlSeconds, createdAt, updatedAt, expiresAt] = row;
      need(isStr(key) && (kind === 'value' || kind === 'claim' || kind === 'lease') && isStr(version), 'entry');
      need(isNum(ttlSeconds) && isNum(createdAt) && isNum(updatedAt) && isNum(expiresAt), 'entry times');
      if (kind === 'lease') {
        const d = value as Record<string, unknown> | null;
        need(
          d !== null &&
            typeof d === 'object' &&
            isNum(d.epoch) &&
            (d.holder === null || isStr(d.holder)) &&
            isNum(d.deadlineAt) &&
            Object.hasOwn(d, 'state'),
          'lease document',
        );
      }
      map.set(key, {
        kind,
        value: deepFreeze(value as JsonValue),
        valueBytes: jsonSize(value, 'entry value'),
        version,
        ttlSeconds,
        createdAt,
        updatedAt,
        expiresAt,
      });
    }
    if (map.size > 0) namespaces.set(item[0] as string, map);
  }
  const locks = new Map<string, Map<string, LockSlot>>();
  for (const item of b.locks) {
    need(isArr(item, 2) && isStr(item[0]) && isArr(item[1]), 'lock namespace');
    const slots = new Map<string, LockSlot>();
    for (const row of item[1] as unknown[]) {
      need(isArr(row, 5) && isStr(row[0]) && isNum(row[2]) && isNum(row[3]) && isArr(row[4]), 'lock');
      const h = row[1];
      let holder: LockHolder | null = null;
      if (h !== null) {
        need(isArr(h, 6) && isStr(h[0]) && isNum(h[1]) && isNum(h[2]) && isNum(h[3]) && isNum(h[4]), 'lock holder');
        jsonSize(h[5], 'lock metadata');
        holder = {
          owner: h[0],
          fence: h[1],
          acquiredAt: h[2],
          expiresAt: h[3],
          ttlSeconds: h[4],
          metadata: deepFreeze(h[5] as JsonValue),
        };
      }
      const waiters: LockWaiter[] = [];
      for (const w of row[4] as unknown[]) {
        need(
          isArr(w, 7) && isStr(w[0]) && isNum(w[1]) && isNum(w[3]) && isNum(w[4]) && isStr(w[5]) && isNum(w[6]),
          'lock waiter',
        );
        jsonSize(w[2], 'waiter metadata');
        waiters.push({
          owner: w[0],
          ttlSeconds: w[1],
          metadata: deepFreeze(w[2] as JsonValue),
          enqueuedAt: w[3],
          waitDeadlineAt: w[4],
          clientId: w[5],
          seq: w[6],
        });
      }
      slots.set(row[0] as string, { holder, lastFence: row[2] as number, freeSince: row[3] as number, waiters });
    }
    if (slots.size > 0) locks.set(item[0] as string, slots);
  }
  const sessions = new Map<string, Session>();
  let cachedBytes = 0;
  for (const item of b.sessions) {
    need(isArr(item, 4) && isStr(item[0]) && isNum(item[1]) && isNum(item[2]) && isArr(item[3]), 'session');
    const results = new Map<number, CachedResult>();
    for (const r of item[3] as unknown[]) {
      need(isArr(r, 2) && isNum(r[0]), 'session result');
      const result = r[1] as Record<string, unknown> | null;
      need(
        result !== null &&
          typeof result === 'object' &&
          ((result.ok === true && typeof result.value === 'object' && result.value !== null) ||
            (result.ok === false &&
              typeof result.error === 'object' &&
              result.error !== null &&
              isStr((result.error as Record<string, unknown>).code))),
        'session result',
      );
      const bytes = jsonSize(result, 'session result');
      cachedBytes += bytes;
      results.set(r[0] as number, { result: result as unknown as CommandResult, bytes });
    }
    sessions.set(item[0] as string, { floorSeq: item[1] as number, lastActiveMs: item[2] as number, results });
  }
  return { nowMs: b.nowMs, index: b.index, term: b.term, namespaces, locks, sessions, cachedBytes };
}
