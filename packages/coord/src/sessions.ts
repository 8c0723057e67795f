/**
 * Exactly-once client sessions: registration, LRU eviction, acknowledgement,
 * the bounded table of remembered results, and late deliveries of queued
 * lock acquires.
 */
import { type CachedResult, jsonBytes, type Machine, type Session } from './machine-state.js';
import type { CommandResult, OpResult } from './types.js';

export function registerSession(s: Machine): OpResult {
  const clientId = `s${s.index}`;
  s.sessions.set(clientId, { floorSeq: 0, lastActiveMs: s.stampMs, results: new Map() });
  s.due(s.stampMs + s.limits.sessionTtlSeconds * 1000);
  while (s.sessions.size > s.limits.maxSessions) {
    const oldest = s.sessions.keys().next().value as string;
    dropSession(s, oldest);
  }
  return { type: 'session', clientId };
}

export function touchSession(s: Machine, clientId: string, session: Session): void {
  session.lastActiveMs = Math.max(session.lastActiveMs, s.stampMs);
  s.sessions.delete(clientId);
  s.sessions.set(clientId, session);
}

export function dropSession(s: Machine, clientId: string): void {
  const session = s.sessions.get(clientId);
  if (!session) return;
  for (const cached of session.results.values()) s.cachedBytes -= cached.bytes;
  s.sessions.delete(clientId);
}

export function ackSession(s: Machine, session: Session, ackSeq: number): void {
  if (ackSeq <= session.floorSeq) return;
  session.floorSeq = ackSeq;
  for (const [seq, cached] of session.results) {
    if (seq <= ackSeq) {
      session.results.delete(seq);
      s.cachedBytes -= cached.bytes;
    }
  }
}

export function remember(s: Machine, clientId: string, session: Session, seq: number, result: CommandResult): void {
  const bytes = jsonBytes(result);
  session.results.set(seq, { result, bytes });
  s.cachedBytes += bytes;
  while (session.results.size > s.limits.maxResultsPerSession) forgetOldest(s, session);
  // Global byte bound: forget the least recently used sessions' oldest results first,
  // but keep the result just recorded.
  for (const [id, other] of s.sessions) {
    if (s.cachedBytes <= s.limits.maxCachedResultBytes) break;
    while (s.cachedBytes > s.limits.maxCachedResultBytes && other.results.size > (id === clientId ? 1 : 0)) {
      forgetOldest(s, other);
    }
  }
}

export function forgetOldest(s: Machine, session: Session): void {
  const first = session.results.entries().next().value as [number, CachedResult];
  session.results.delete(first[0]);
  s.cachedBytes -= first[1].bytes;
  if (first[0] > session.floorSeq) session.floorSeq = first[0];
}

/** Records a result for an earlier command (a queued lock acquire) and emits its delivery. */
export function deliver(s: Machine, clientId: string, seq: number, result: CommandResult): void {
  const session = s.sessions.get(clientId);
  const cached = session?.results.get(seq);
  if (session && cached) {
    const bytes = jsonBytes(result);
    s.cachedBytes += bytes - cached.bytes;
    session.results.set(seq, { result, bytes });
  }
  s.deliveries.push({ clientId, seq, result });
}
