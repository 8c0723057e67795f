import { ByteReader, ByteWriter, DecodeError } from '@parley/interface';

/**
 * The raft-* value machine's client sessions (§6.3 of the Raft thesis): a
 * simulated client tags each value with its id and a sequence number, so a
 * value retried after a lost reply is applied at most once. This is the test
 * machine's own table, not a part of Parley: the shipped client sessions are
 * coord's (packages/coord/src/sessions.ts), which the node's strong side and
 * the coord-* and node-strong-* scenarios run.
 *
 * Envelope layout:
 *
 * | field    | encoding                    |
 * | -------- | --------------------------- |
 * | version  | u8 = 1                      |
 * | clientId | varint length + UTF-8       |
 * | seq      | varint (≥ 1)                |
 * | payload  | the remaining bytes         |
 */
export interface SessionEnvelope {
  clientId: string;
  seq: number;
  payload: Uint8Array;
}

const SESSION_VERSION = 1;
const MAX_CLIENT_ID_BYTES = 256;

export function encodeSessionEnvelope(env: SessionEnvelope): Uint8Array {
  if (!(env.seq >= 1) || !Number.isSafeInteger(env.seq)) throw new RangeError('session seq must be a positive integer');
  const w = new ByteWriter(16 + env.clientId.length * 3 + env.payload.byteLength);
  w.u8(SESSION_VERSION);
  w.string(env.clientId);
  w.uint(env.seq);
  const head = w.finish();
  const out = new Uint8Array(head.byteLength + env.payload.byteLength);
  out.set(head, 0);
  out.set(env.payload, head.byteLength);
  return out;
}

export function decodeSessionEnvelope(bytes: Uint8Array): SessionEnvelope {
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== SESSION_VERSION) throw new DecodeError(`unknown session envelope version ${version}`, 0);
  const clientId = r.string();
  if (clientId.length === 0 || clientId.length > MAX_CLIENT_ID_BYTES) throw new DecodeError('bad client id', 1);
  const seq = r.uint();
  if (seq < 1) throw new DecodeError('session seq must be ≥ 1', r.pos);
  return { clientId, seq, payload: bytes.slice(r.pos) };
}

export type SessionVerdict<R> =
  | { type: 'apply' }
  | { type: 'duplicate'; result: R | undefined }
  | { type: 'stale' }
  | { type: 'expired' };

interface SessionRecord<R> {
  lastSeq: number;
  lastResult: R | undefined;
  lastIndex: number;
}

/**
 * The applying state machine's session table. It must be driven only by the
 * applied log (same entries, same order on every replica), so eviction by
 * least-recently-applied index is deterministic.
 *
 * Rules: seq = last + 1 (or any seq for a new client) → apply; seq = last →
 * duplicate, answer with the cached result; seq < last → stale (the client
 * already saw a later reply); a client evicted for capacity is `expired` when
 * it shows up with seq > 1 again, so it never re-applies silently.
 */
export class ClientSessions<R = unknown> {
  private readonly sessions = new Map<string, SessionRecord<R>>();
  private evictedUpTo = 0;

  constructor(readonly maxSessions = 10_000) {}

  check(clientId: string, seq: number): SessionVerdict<R> {
    const s = this.sessions.get(clientId);
    if (!s) return seq > 1 && this.evictedUpTo > 0 ? { type: 'expired' } : { type: 'apply' };
    if (seq === s.lastSeq) return { type: 'duplicate', result: s.lastResult };
    if (seq < s.lastSeq) return { type: 'stale' };
    return { type: 'apply' };
  }

  /** Records the result of applying (clientId, seq) at log `index`. */
  record(clientId: string, seq: number, index: number, result: R | undefined): void {
    this.sessions.delete(clientId); // re-insert: Map order is least-recently-applied first
    this.sessions.set(clientId, { lastSeq: seq, lastResult: result, lastIndex: index });
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next().value as string;
      const rec = this.sessions.get(oldest) as SessionRecord<R>;
      this.evictedUpTo = Math.max(this.evictedUpTo, rec.lastIndex);
      this.sessions.delete(oldest);
    }
  }

  size(): number {
    return this.sessions.size;
  }

  /** The table as rows, least recently applied first (put it in the state machine's snapshot). */
  export(): { clientId: string; lastSeq: number; lastIndex: number; result: R | undefined }[] {
    return [...this.sessions].map(([clientId, r]) => ({
      clientId,
      lastSeq: r.lastSeq,
      lastIndex: r.lastIndex,
      result: r.lastResult,
    }));
  }

  /** Rebuilds a table from `export()` rows (after installing a snapshot). */
  static restore<R>(
    rows: readonly { clientId: string; lastSeq: number; lastIndex: number; result: R | undefined }[],
    maxSessions = 10_000,
    evictedUpTo = 0,
  ): ClientSessions<R> {
    const t = new ClientSessions<R>(maxSessions);
    for (const r of rows)
      t.sessions.set(r.clientId, { lastSeq: r.lastSeq, lastResult: r.result, lastIndex: r.lastIndex });
    t.evictedUpTo = evictedUpTo;
    return t;
  }

  /** Highest log index of an evicted session (part of the snapshot, with `export()`). */
  get evictedIndex(): number {
    return this.evictedUpTo;
  }
}
