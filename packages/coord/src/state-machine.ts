/**
 * CoordStateMachine: the deterministic state machine behind every strong
 * operation. Raft hands it committed commands in log order; it reads time only
 * from the commands, so every replica computes the same results and the same
 * snapshot bytes.
 */
import {
  DecodeError,
  FenceStaleError,
  InvalidArgumentError,
  KeyAlreadyExistsError,
  KeyNotFoundError,
  LeaseLostError,
  LockHeldError,
  NamespaceFullError,
  ParleyError,
  VersionMismatchError,
} from '@parley/interface';
import { decodeCommand, decodeSnapshotBody, encodeSnapshotBody } from './codec.js';
import { evalFilter, type FilterNode, parseFilter } from './filter.js';
import { compileGlob, globMatch } from './glob.js';
import {
  base64UrlDecode,
  base64UrlEncode,
  canonicalJson,
  deepFreeze,
  type JsonValue,
  utf8Decode,
  utf8Encode,
  utf8Length,
} from './json.js';
import {
  type ApplyOutput,
  type Command,
  type CommandResult,
  type CoordConfig,
  type CoordLimits,
  DEFAULT_LIMITS,
  type Delivery,
  type Entry,
  type EntryKind,
  type ErrorPayload,
  type FenceRef,
  type LeaseDocument,
  type LeaseView,
  type LockGrant,
  type LockInfo,
  type LogPosition,
  type Operation,
  type OpResult,
  READ_OPERATIONS,
  type SortBy,
  type SortOrder,
} from './types.js';
import {
  checkFenceToken,
  checkId,
  checkIntInRange,
  checkKey,
  checkNamespace,
  checkOptionalBool,
  checkOptionalString,
  checkValue,
} from './validate.js';
import { versionToken, type WriteKind } from './version.js';

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

/**
 * UTF-8 size of a value the state machine built from JSON: the same as its
 * canonical size (key order does not change the length), without sorting.
 */
/** Largest command stamp accepted: the end of the ECMAScript time range (year 275760). */
export const MAX_TIME_MS = 8_640_000_000_000_000;

function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value));
}

function errorPayload(err: ParleyError): ErrorPayload {
  return { code: err.code, message: err.message, details: { ...err.details } };
}

function ok(value: OpResult): CommandResult {
  return { ok: true, value };
}

function lockName(namespace: string, key: string): string {
  return `${namespace}/${key}`;
}

interface CursorPosition {
  sortValue: number | string;
  key: string;
}

/**
 * @example
 * ```ts
 * const sm = new CoordStateMachine({ versionKey: 'cluster-secret' });
 * const { result } = sm.apply(
 *   { nowMs: 1_700_000_000_000, op: { type: 'set', namespace: 'jobs', key: 'cfg', value: { a: 1 } } },
 *   { index: 1, term: 1 },
 * );
 * const bytes = sm.snapshot(); // identical on every replica that applied the same log
 * ```
 */
export class CoordStateMachine {
  readonly limits: Readonly<CoordLimits>;
  private readonly versionKey: string;

  private nowMs = 0;
  private lastIndex = 0;
  private lastTerm = 0;
  private namespaces = new Map<string, Map<string, StoredEntry>>();
  private locks = new Map<string, Map<string, LockSlot>>();
  /** In least-recently-used-first order. */
  private sessions = new Map<string, Session>();
  private cachedBytes = 0;
  /**
   * A lower bound on every deadline the expire command acts on (entry
   * expiry, lock expiry, waiter timeout, idle-slot retention, session
   * expiry), so an expire with nothing due costs O(1). Derived state: not in
   * snapshots; a restored replica starts at -Infinity and scans once.
   */
  private nextDueMs = Number.POSITIVE_INFINITY;

  // Per-apply context.
  private index = 0;
  private term = 0;
  private deliveries: Delivery[] = [];

  constructor(config: CoordConfig = {}) {
    this.versionKey = config.versionKey ?? '';
    this.limits = Object.freeze({ ...DEFAULT_LIMITS, ...(config.limits ?? {}) });
    checkIntInRange('maxTimeStepMs', this.limits.maxTimeStepMs, 1, MAX_TIME_MS);
  }

  /**
   * State-machine time: the largest command stamp applied so far, except that
   * one command advances it by at most `limits.maxTimeStepMs`.
   */
  get timeMs(): number {
    return this.nowMs;
  }

  /** The log position of the last applied command (or of the restored snapshot). */
  get applied(): LogPosition {
    return { index: this.lastIndex, term: this.lastTerm };
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Applies a committed log entry's bytes; undecodable bytes give a decode_error result. */
  applyBytes(data: Uint8Array, position: LogPosition): ApplyOutput {
    let command: Command;
    try {
      command = decodeCommand(data);
    } catch (err) {
      this.advance(position, undefined);
      return { result: { ok: false, error: errorPayload(err as DecodeError) }, deliveries: [] };
    }
    return this.apply(command, position);
  }

  /**
   * Applies one committed command at `position`. Indexes must strictly
   * increase. Never throws for a bad command: failures are error results and
   * leave the entries, locks and leases as they were.
   */
  apply(command: Command, position: LogPosition): ApplyOutput {
    const raw = command?.nowMs;
    const stamp = Number.isSafeInteger(raw) && raw >= 0 && raw <= MAX_TIME_MS ? raw : undefined;
    this.advance(position, stamp);
    if (stamp === undefined) {
      const err = new InvalidArgumentError(`command nowMs must be an integer in 0..${MAX_TIME_MS}`, {
        nowMs: raw ?? null,
      });
      return { result: this.fail(err), deliveries: [] };
    }
    this.index = position.index;
    this.term = position.term;
    this.deliveries = [];
    const result = this.applyCommand(command);
    const deliveries = this.deliveries;
    this.deliveries = [];
    return { result, deliveries };
  }

  private advance(position: LogPosition, stamp: number | undefined): void {
    if (!Number.isSafeInteger(position.index) || position.index <= this.lastIndex) {
      throw new InvalidArgumentError(`apply at index ${position.index} after ${this.lastIndex}: indexes must increase`);
    }
    this.lastIndex = position.index;
    this.lastTerm = position.term;
    if (stamp !== undefined && stamp > this.nowMs) {
      // The first stamped command sets the clock; after that one command moves it at most
      // maxTimeStepMs, so a leader whose clock stepped ahead cannot expire everything at once.
      this.nowMs = this.nowMs === 0 ? stamp : Math.min(stamp, this.nowMs + this.limits.maxTimeStepMs);
    }
  }

  private applyCommand(command: Command): CommandResult {
    const op = command?.op as Operation | undefined;
    if (op === null || typeof op !== 'object' || typeof op.type !== 'string') {
      return { ok: false, error: errorPayload(new InvalidArgumentError('command has no operation')) };
    }
    const isRead = READ_OPERATIONS.has(op.type);
    const clientId = command.clientId;
    let session: Session | undefined;
    if (clientId !== undefined && op.type !== 'register_session') {
      session = this.sessions.get(clientId);
      if (session) {
        this.touchSession(clientId, session);
        if (typeof command.ackSeq === 'number' && Number.isSafeInteger(command.ackSeq)) {
          this.ackSession(session, command.ackSeq);
        }
      }
      if (!isRead && op.type !== 'expire') {
        if (!session) {
          return this.fail(
            new InvalidArgumentError(`client session '${clientId}' is unknown or expired: register a new one`, {
              reason: 'session_expired',
              clientId,
            }),
          );
        }
        const seq = command.seq;
        if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
          return this.fail(new InvalidArgumentError('a command with a session needs a seq ≥ 1'));
        }
        const cached = session.results.get(seq);
        if (cached) return cached.result;
        if (seq <= session.floorSeq) {
          return this.fail(
            new InvalidArgumentError(`seq ${seq} of session '${clientId}' is older than its remembered results`, {
              reason: 'stale_sequence',
              clientId,
              seq,
            }),
          );
        }
        const result = this.execute(op, clientId, seq);
        this.remember(clientId, session, seq, result);
        return result;
      }
    }
    return this.execute(op, undefined, undefined);
  }

  private fail(err: ParleyError): CommandResult {
    return { ok: false, error: errorPayload(err) };
  }

  private execute(op: Operation, clientId: string | undefined, seq: number | undefined): CommandResult {
    try {
      return ok(this.run(op, clientId, seq));
    } catch (err) {
      if (err instanceof ParleyError) return this.fail(err);
      throw err;
    }
  }

  /**
   * Answers a read-only operation (get, list, lease_attach, lock_inspect,
   * lock_list) from the current state without changing it, at time
   * max(state-machine time, nowMs). Use after a ReadIndex/lease read.
   */
  query(op: Operation, nowMs?: number): CommandResult {
    const now = Math.max(this.nowMs, nowMs ?? 0);
    try {
      switch (op.type) {
        case 'get':
          return ok(this.readGet(op.namespace, op.key, now));
        case 'list':
          return ok(this.readList(op, now));
        case 'lease_attach':
          return ok(this.readAttach(op.namespace, op.key, op.holder, now));
        case 'lock_inspect': {
          const namespace = checkNamespace(this.limits, op.namespace);
          const key = checkKey(this.limits, op.key);
          return ok({ type: 'lock_info', lock: this.lockInfo(namespace, key, this.slot(namespace, key), now) });
        }
        case 'lock_list':
          return ok(this.readLockList(op.namespace, now));
        default:
          throw new InvalidArgumentError(`'${op.type}' is not a read-only operation`);
      }
    } catch (err) {
      if (err instanceof ParleyError) return this.fail(err);
      throw err;
    }
  }

  // ---------------------------------------------------------------- dispatch

  private run(op: Operation, clientId: string | undefined, seq: number | undefined): OpResult {
    const now = this.nowMs;
    switch (op.type) {
      case 'register_session':
        return this.registerSession();
      case 'noop':
        return { type: 'noop' };
      case 'expire':
        return this.expire();
      case 'set':
        return this.set(op);
      case 'get':
        return this.readGet(op.namespace, op.key, now);
      case 'delete':
        return this.delete(op);
      case 'list':
        return this.readList(op, now);
      case 'delete_namespace':
        return this.deleteNamespace(op);
      case 'claim':
        return this.claim(op);
      case 'lease_acquire':
        return this.leaseAcquire(op);
      case 'lease_renew':
        return this.leaseRenew(op);
      case 'lease_write':
        return this.leaseWrite(op);
      case 'lease_release':
        return this.leaseRelease(op);
      case 'lease_cooperative_write':
        return this.cooperativeWrite(op);
      case 'lease_attach':
        return this.readAttach(op.namespace, op.key, op.holder, now);
      case 'lock_acquire':
        return this.lockAcquire(op, clientId, seq);
      case 'lock_renew':
        return this.lockRenew(op);
      case 'lock_release':
        return this.lockRelease(op);
      case 'lock_inspect': {
        const namespace = checkNamespace(this.limits, op.namespace);
        const key = checkKey(this.limits, op.key);
        const slot = this.normalizedSlot(namespace, key);
        return { type: 'lock_info', lock: this.lockInfo(namespace, key, slot, now) };
      }
      case 'lock_list': {
        const namespace = checkNamespace(this.limits, op.namespace);
        const slots = this.locks.get(namespace);
        // Key order: deliveries must come out the same on a replica restored from a snapshot.
        if (slots) for (const key of [...slots.keys()].sort()) this.normalizedSlot(namespace, key);
        return this.readLockList(namespace, now);
      }
      default:
        throw new InvalidArgumentError(`unknown operation '${(op as { type: unknown }).type}'`);
    }
  }

  // ---------------------------------------------------------------- sessions

  private registerSession(): OpResult {
    const clientId = `s${this.index}`;
    this.sessions.set(clientId, { floorSeq: 0, lastActiveMs: this.nowMs, results: new Map() });
    this.due(this.nowMs + this.limits.sessionTtlSeconds * 1000);
    while (this.sessions.size > this.limits.maxSessions) {
      const oldest = this.sessions.keys().next().value as string;
      this.dropSession(oldest);
    }
    return { type: 'session', clientId };
  }

  private touchSession(clientId: string, session: Session): void {
    session.lastActiveMs = this.nowMs;
    this.sessions.delete(clientId);
    this.sessions.set(clientId, session);
  }

  private dropSession(clientId: string): void {
    const session = this.sessions.get(clientId);
    if (!session) return;
    for (const cached of session.results.values()) this.cachedBytes -= cached.bytes;
    this.sessions.delete(clientId);
  }

  private ackSession(session: Session, ackSeq: number): void {
    if (ackSeq <= session.floorSeq) return;
    session.floorSeq = ackSeq;
    for (const [seq, cached] of session.results) {
      if (seq <= ackSeq) {
        session.results.delete(seq);
        this.cachedBytes -= cached.bytes;
      }
    }
  }

  private remember(clientId: string, session: Session, seq: number, result: CommandResult): void {
    const bytes = jsonBytes(result);
    session.results.set(seq, { result, bytes });
    this.cachedBytes += bytes;
    while (session.results.size > this.limits.maxResultsPerSession) this.forgetOldest(session);
    // Global byte bound: forget the least recently used sessions' oldest results first,
    // but keep the result just recorded.
    for (const [id, other] of this.sessions) {
      if (this.cachedBytes <= this.limits.maxCachedResultBytes) break;
      while (this.cachedBytes > this.limits.maxCachedResultBytes && other.results.size > (id === clientId ? 1 : 0)) {
        this.forgetOldest(other);
      }
    }
  }

  private forgetOldest(session: Session): void {
    const first = session.results.entries().next().value as [number, CachedResult];
    session.results.delete(first[0]);
    this.cachedBytes -= first[1].bytes;
    if (first[0] > session.floorSeq) session.floorSeq = first[0];
  }

  /** Records a result for an earlier command (a queued lock acquire) and emits its delivery. */
  private deliver(clientId: string, seq: number, result: CommandResult): void {
    const session = this.sessions.get(clientId);
    const cached = session?.results.get(seq);
    if (session && cached) {
      const bytes = jsonBytes(result);
      this.cachedBytes += bytes - cached.bytes;
      session.results.set(seq, { result, bytes });
    }
    this.deliveries.push({ clientId, seq, result });
  }

  // ---------------------------------------------------------------- entries

  private liveEntry(namespace: string, key: string, now: number): StoredEntry | undefined {
    const entry = this.namespaces.get(namespace)?.get(key);
    return entry && entry.expiresAt > now ? entry : undefined;
  }

  private view(namespace: string, key: string, e: StoredEntry): Entry {
    return {
      namespace,
      key,
      kind: e.kind,
      value: e.value,
      version: e.version,
      ttlSeconds: e.ttlSeconds,
      createdAt: e.createdAt,
      updatedAt: e.updatedAt,
      expiresAt: e.expiresAt,
    };
  }

  private checkTtl(ttl: unknown, fallback: number): number {
    if (ttl === undefined) return fallback;
    return checkIntInRange('ttlSeconds', ttl, this.limits.minTtlSeconds, this.limits.maxTtlSeconds);
  }

  /** Throws NamespaceFullError when a new key would exceed the bound (expired keys are purged first). */
  private ensureRoom(namespace: string): void {
    const map = this.namespaces.get(namespace);
    if (!map || map.size < this.limits.maxKeysPerNamespace) return;
    for (const [key, e] of map) if (e.expiresAt <= this.nowMs) map.delete(key);
    if (map.size >= this.limits.maxKeysPerNamespace) {
      throw new NamespaceFullError(namespace, this.limits.maxKeysPerNamespace);
    }
  }

  private put(
    namespace: string,
    key: string,
    previous: StoredEntry | undefined,
    fields: { kind: EntryKind; value: JsonValue; valueBytes: number; ttlSeconds: number; expiresAt: number },
    writeKind: WriteKind,
  ): StoredEntry {
    let map = this.namespaces.get(namespace);
    if (!map) {
      map = new Map();
      this.namespaces.set(namespace, map);
    }
    const entry: StoredEntry = {
      kind: fields.kind,
      value: fields.value,
      valueBytes: fields.valueBytes,
      ttlSeconds: fields.ttlSeconds,
      expiresAt: fields.expiresAt,
      version: versionToken(this.versionKey, this.index, this.term, namespace, key, writeKind),
      createdAt: previous ? previous.createdAt : this.nowMs,
      updatedAt: this.nowMs,
    };
    map.set(key, entry);
    this.due(entry.expiresAt);
    return entry;
  }

  private remove(namespace: string, key: string): void {
    const map = this.namespaces.get(namespace);
    if (!map) return;
    map.delete(key);
    if (map.size === 0) this.namespaces.delete(namespace);
  }

  private checkFence(fence: FenceRef | undefined): void {
    if (fence === undefined) return;
    if (fence === null || typeof fence !== 'object') throw new InvalidArgumentError('fence must be an object');
    const namespace = checkNamespace(this.limits, fence.namespace);
    const key = checkKey(this.limits, fence.key);
    const token = checkFenceToken(fence.token);
    const slot = this.normalizedSlot(namespace, key);
    if (!slot) throw new FenceStaleError(lockName(namespace, key), token, 0);
    if (token > slot.lastFence) {
      throw new InvalidArgumentError(`fence ${token} was never granted on '${lockName(namespace, key)}'`, {
        fence: token,
        lastFence: slot.lastFence,
      });
    }
    if (token < slot.lastFence) throw new FenceStaleError(lockName(namespace, key), token, slot.lastFence);
  }

  private set(op: Extract<Operation, { type: 'set' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const { value, bytes } = checkValue(op.value, this.limits.maxValueBytes);
    const ttlSeconds = this.checkTtl(op.ttlSeconds, this.limits.defaultTtlSeconds);
    const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
    const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
    if (ifNotExists && ifVersion !== undefined) {
      throw new InvalidArgumentError('ifNotExists and ifVersion exclude each other');
    }
    this.checkFence(op.fence);
    const existing = this.liveEntry(namespace, key, this.nowMs);
    if (existing?.kind === 'claim') throw new KeyAlreadyExistsError(namespace, key);
    if (existing?.kind === 'lease') {
      throw new InvalidArgumentError(`'${namespace}/${key}' holds a lease: use the lease operations`, {
        namespace,
        key,
      });
    }
    if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
    if (ifVersion !== undefined && existing?.version !== ifVersion) {
      throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
    }
    if (!existing) this.ensureRoom(namespace);
    const entry = this.put(
      namespace,
      key,
      existing,
      { kind: 'value', value, valueBytes: bytes, ttlSeconds, expiresAt: this.nowMs + ttlSeconds * 1000 },
      'set',
    );
    return { type: 'entry', entry: this.view(namespace, key, entry), operation: existing ? 'updated' : 'created' };
  }

  private readGet(ns: string, k: string, now: number): OpResult {
    const namespace = checkNamespace(this.limits, ns);
    const key = checkKey(this.limits, k);
    const entry = this.liveEntry(namespace, key, now);
    if (!entry) throw new KeyNotFoundError(namespace, key);
    return { type: 'got', entry: this.view(namespace, key, entry) };
  }

  private delete(op: Extract<Operation, { type: 'delete' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
    this.checkFence(op.fence);
    const existing = this.liveEntry(namespace, key, this.nowMs);
    if (!existing) {
      if (ifVersion !== undefined) throw new VersionMismatchError(lockName(namespace, key), ifVersion, undefined);
      throw new KeyNotFoundError(namespace, key);
    }
    if (existing.kind === 'claim') {
      throw new InvalidArgumentError(`'${namespace}/${key}' is a claim: claims are immutable`, { namespace, key });
    }
    if (ifVersion !== undefined && existing.version !== ifVersion) {
      throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing.version);
    }
    this.remove(namespace, key);
    return { type: 'deleted', namespace, key };
  }

  private readList(op: Extract<Operation, { type: 'list' }>, now: number): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const q = checkOptionalString('q', op.q);
    if (q !== undefined && q.length > this.limits.maxKeyLength) {
      throw new InvalidArgumentError(`q must be at most ${this.limits.maxKeyLength} characters`);
    }
    const filterText = checkOptionalString('filter', op.filter);
    const sortBy: SortBy = op.sortBy ?? 'key';
    if (sortBy !== 'key' && sortBy !== 'created_at' && sortBy !== 'updated_at') {
      throw new InvalidArgumentError("sortBy must be 'key', 'created_at' or 'updated_at'");
    }
    const sortOrder: SortOrder = op.sortOrder ?? 'asc';
    if (sortOrder !== 'asc' && sortOrder !== 'desc')
      throw new InvalidArgumentError("sortOrder must be 'asc' or 'desc'");
    const limit =
      op.limit === undefined
        ? this.limits.defaultListLimit
        : checkIntInRange('limit', op.limit, 1, this.limits.maxListLimit);
    const cursorText = checkOptionalString('cursor', op.cursor);
    const filter: FilterNode | undefined = filterText === undefined ? undefined : parseFilter(filterText);
    const after = cursorText === undefined ? undefined : decodeCursor(cursorText, sortBy, sortOrder);
    const needle = q?.toLowerCase();

    const sortValue = (key: string, e: StoredEntry): number | string =>
      sortBy === 'key' ? key : sortBy === 'created_at' ? e.createdAt : e.updatedAt;
    const sign = sortOrder === 'asc' ? 1 : -1;
    const compare = (a: CursorPosition, b: CursorPosition): number => {
      let c = 0;
      if (a.sortValue < b.sortValue) c = -1;
      else if (a.sortValue > b.sortValue) c = 1;
      else if (a.key < b.key) c = -1;
      else if (a.key > b.key) c = 1;
      return c * sign;
    };

    const matches: { pos: CursorPosition; entry: StoredEntry }[] = [];
    const map = this.namespaces.get(namespace);
    if (map) {
      for (const [key, e] of map) {
        if (e.expiresAt <= now) continue;
        if (needle !== undefined && !key.toLowerCase().includes(needle)) continue;
        const pos = { sortValue: sortValue(key, e), key };
        if (after && compare(pos, after) <= 0) continue;
        if (filter && !evalFilter(filter, e.value)) continue;
        matches.push({ pos, entry: e });
      }
    }
    matches.sort((a, b) => compare(a.pos, b.pos));
    // A page ends at `limit` items or when the next value would push it past maxListPageBytes.
    const page: typeof matches = [];
    let pageBytes = 0;
    for (const m of matches) {
      if (page.length >= limit) break;
      if (page.length > 0 && pageBytes + m.entry.valueBytes > this.limits.maxListPageBytes) break;
      page.push(m);
      pageBytes += m.entry.valueBytes;
    }
    const last = page.at(-1);
    const nextCursor =
      matches.length > page.length && last ? encodeCursor(sortBy, sortOrder, last.pos.sortValue, last.pos.key) : null;
    return { type: 'list', items: page.map((m) => this.view(namespace, m.pos.key, m.entry)), nextCursor };
  }

  private deleteNamespace(op: Extract<Operation, { type: 'delete_namespace' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    if (op.confirm !== true) throw new InvalidArgumentError('deleteNamespace requires confirm: true');
    const pattern = checkOptionalString('pattern', op.pattern) ?? '*';
    const glob = compileGlob(pattern);
    const map = this.namespaces.get(namespace);
    let deleted = 0;
    if (map) {
      for (const [key, e] of map) {
        if (!globMatch(glob, key)) continue;
        if (e.expiresAt > this.nowMs) deleted++;
        map.delete(key);
      }
      if (map.size === 0) this.namespaces.delete(namespace);
    }
    return { type: 'namespace_deleted', deleted_count: deleted, namespace, pattern_used: pattern };
  }

  // ---------------------------------------------------------------- claims

  private claim(op: Extract<Operation, { type: 'claim' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const { value, bytes } = checkValue(op.value, this.limits.maxValueBytes);
    const ttlSeconds = this.checkTtl(op.ttlSeconds, this.limits.defaultClaimTtlSeconds);
    const existing = this.liveEntry(namespace, key, this.nowMs);
    if (existing) {
      return {
        type: 'claim',
        won: false,
        value: existing.value,
        version: existing.version,
        entry: this.view(namespace, key, existing),
      };
    }
    this.ensureRoom(namespace);
    const entry = this.put(
      namespace,
      key,
      undefined,
      { kind: 'claim', value, valueBytes: bytes, ttlSeconds, expiresAt: this.nowMs + ttlSeconds * 1000 },
      'claim',
    );
    return { type: 'claim', won: true, value, version: entry.version, entry: this.view(namespace, key, entry) };
  }

  // ---------------------------------------------------------------- leases

  private leaseView(namespace: string, key: string, e: StoredEntry): LeaseView {
    const doc = e.value as unknown as LeaseDocument;
    return {
      namespace,
      key,
      epoch: doc.epoch,
      holder: doc.holder,
      deadlineAt: doc.deadlineAt,
      state: doc.state,
      version: e.version,
      ttlSeconds: e.ttlSeconds,
    };
  }

  private liveLease(namespace: string, key: string, now: number): StoredEntry | undefined {
    const e = this.liveEntry(namespace, key, now);
    if (e && e.kind !== 'lease') {
      throw new InvalidArgumentError(`'${namespace}/${key}' holds a ${e.kind}, not a lease`, { namespace, key });
    }
    return e;
  }

  private writeLease(
    namespace: string,
    key: string,
    previous: StoredEntry | undefined,
    doc: LeaseDocument,
    ttlSeconds: number,
  ): StoredEntry {
    // Keys in canonical order; the state inside is already a frozen canonical copy.
    const value = Object.freeze({
      deadlineAt: doc.deadlineAt,
      epoch: doc.epoch,
      holder: doc.holder,
      state: doc.state,
    }) as unknown as JsonValue;
    const valueBytes = jsonBytes(value);
    const retentionMs = this.limits.leaseRetentionSeconds * 1000;
    const expiresAt = Math.max(doc.deadlineAt, this.nowMs) + retentionMs;
    return this.put(namespace, key, previous, { kind: 'lease', value, valueBytes, ttlSeconds, expiresAt }, 'lease');
  }

  private leaseState(state: unknown): JsonValue {
    return checkValue(state, this.limits.maxValueBytes).value;
  }

  private leaseAcquire(op: Extract<Operation, { type: 'lease_acquire' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const holder = checkId(this.limits, 'holder', op.holder);
    const ttlSeconds = checkIntInRange(
      'ttlSeconds',
      op.ttlSeconds,
      this.limits.minTtlSeconds,
      this.limits.maxTtlSeconds,
    );
    const stealIfExpired =
      op.stealIfExpired === undefined ? true : checkOptionalBool('stealIfExpired', op.stealIfExpired);
    const hasState = Object.hasOwn(op, 'state') && op.state !== undefined;
    const newState = hasState ? this.leaseState(op.state) : undefined;
    const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
    const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
    const now = this.nowMs;
    const existing = this.liveLease(namespace, key, now);
    if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
    if (ifVersion !== undefined && existing?.version !== ifVersion) {
      throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
    }
    const doc = existing?.value as unknown as LeaseDocument | undefined;
    if (doc && doc.holder !== null && doc.holder !== holder) {
      const live = doc.deadlineAt > now;
      if (live || !stealIfExpired) throw new LockHeldError(lockName(namespace, key), doc.holder, doc.deadlineAt);
    }
    if (!existing) this.ensureRoom(namespace);
    const next: LeaseDocument = {
      epoch: Math.max((doc?.epoch ?? 0) + 1, this.index),
      holder,
      deadlineAt: now + ttlSeconds * 1000,
      state: hasState ? (newState as JsonValue) : (doc?.state ?? null),
    };
    const entry = this.writeLease(namespace, key, existing, next, ttlSeconds);
    return { type: 'lease', lease: this.leaseView(namespace, key, entry) };
  }

  /** The live lease entry if (holder, epoch) still owns it; LeaseLostError otherwise. */
  private guardLease(ns: unknown, k: unknown, h: unknown, epoch: unknown) {
    const namespace = checkNamespace(this.limits, ns);
    const key = checkKey(this.limits, k);
    const holder = checkId(this.limits, 'holder', h);
    const e = checkIntInRange('epoch', epoch, 0, Number.MAX_SAFE_INTEGER);
    const existing = this.liveEntry(namespace, key, this.nowMs);
    if (existing?.kind !== 'lease') throw new LeaseLostError(lockName(namespace, key), e, undefined);
    const doc = existing.value as unknown as LeaseDocument;
    if (doc.epoch !== e || doc.holder !== holder) throw new LeaseLostError(lockName(namespace, key), e, doc.epoch);
    return { namespace, key, existing, doc };
  }

  private leaseRenew(op: Extract<Operation, { type: 'lease_renew' }>): OpResult {
    const ttlSeconds = checkIntInRange(
      'ttlSeconds',
      op.ttlSeconds,
      this.limits.minTtlSeconds,
      this.limits.maxTtlSeconds,
    );
    const { namespace, key, existing, doc } = this.guardLease(op.namespace, op.key, op.holder, op.epoch);
    const entry = this.writeLease(
      namespace,
      key,
      existing,
      { ...doc, deadlineAt: this.nowMs + ttlSeconds * 1000 },
      ttlSeconds,
    );
    return { type: 'lease', lease: this.leaseView(namespace, key, entry) };
  }

  private leaseWrite(op: Extract<Operation, { type: 'lease_write' }>): OpResult {
    const state = this.leaseState(op.state);
    const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
    const { namespace, key, existing, doc } = this.guardLease(op.namespace, op.key, op.holder, op.epoch);
    if (ifVersion !== undefined && existing.version !== ifVersion) {
      throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing.version);
    }
    const entry = this.writeLease(namespace, key, existing, { ...doc, state }, existing.ttlSeconds);
    return { type: 'lease', lease: this.leaseView(namespace, key, entry) };
  }

  private leaseRelease(op: Extract<Operation, { type: 'lease_release' }>): OpResult {
    const hasState = Object.hasOwn(op, 'state') && op.state !== undefined;
    const state = hasState ? this.leaseState(op.state) : undefined;
    const { namespace, key, existing, doc } = this.guardLease(op.namespace, op.key, op.holder, op.epoch);
    const next: LeaseDocument = {
      epoch: doc.epoch,
      holder: null,
      deadlineAt: this.nowMs,
      state: hasState ? (state as JsonValue) : doc.state,
    };
    const entry = this.writeLease(namespace, key, existing, next, existing.ttlSeconds);
    return { type: 'lease', lease: this.leaseView(namespace, key, entry) };
  }

  private cooperativeWrite(op: Extract<Operation, { type: 'lease_cooperative_write' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const state = this.leaseState(op.state);
    const ifVersion = checkOptionalString('ifVersion', op.ifVersion);
    const ifNotExists = checkOptionalBool('ifNotExists', op.ifNotExists);
    const existing = this.liveLease(namespace, key, this.nowMs);
    if (ifNotExists && existing) throw new KeyAlreadyExistsError(namespace, key);
    if (ifVersion !== undefined && existing?.version !== ifVersion) {
      throw new VersionMismatchError(lockName(namespace, key), ifVersion, existing?.version);
    }
    if (!existing) this.ensureRoom(namespace);
    const doc = existing?.value as unknown as LeaseDocument | undefined;
    const next: LeaseDocument = doc ? { ...doc, state } : { epoch: 0, holder: null, deadlineAt: this.nowMs, state };
    const ttlSeconds = existing?.ttlSeconds ?? this.limits.defaultTtlSeconds;
    const entry = this.writeLease(namespace, key, existing, next, ttlSeconds);
    return { type: 'lease', lease: this.leaseView(namespace, key, entry) };
  }

  private readAttach(ns: string, k: string, h: string, now: number): OpResult {
    const namespace = checkNamespace(this.limits, ns);
    const key = checkKey(this.limits, k);
    const holder = checkId(this.limits, 'holder', h);
    const e = this.liveEntry(namespace, key, now);
    if (e?.kind !== 'lease') return { type: 'lease_absent' };
    const doc = e.value as unknown as LeaseDocument;
    if (doc.holder !== holder || doc.deadlineAt <= now) return { type: 'lease_absent' };
    return { type: 'lease', lease: this.leaseView(namespace, key, e) };
  }

  // ---------------------------------------------------------------- locks

  private slot(namespace: string, key: string): LockSlot | undefined {
    return this.locks.get(namespace)?.get(key);
  }

  private dropSlot(namespace: string, key: string): void {
    const slots = this.locks.get(namespace);
    if (!slots) return;
    slots.delete(key);
    if (slots.size === 0) this.locks.delete(namespace);
  }

  private grantFence(slot: LockSlot): number {
    return Math.max(slot.lastFence + 1, this.index);
  }

  /**
   * Brings a lock slot up to the current time: auto-releases an expired
   * holder, hands the lock to the first waiter still waiting when it became
   * free (one waiter per call), times out waiters whose wait has ended, and
   * forgets a slot free for longer than the retention. Returns the slot, or
   * undefined if it is (now) gone.
   */
  private normalizedSlot(namespace: string, key: string): LockSlot | undefined {
    const slot = this.slot(namespace, key);
    if (!slot) return undefined;
    const now = this.nowMs;
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
          this.deliver(w.clientId, w.seq, this.fail(this.waitTimeout(namespace, key, slot)));
          continue;
        }
        const fence = this.grantFence(slot);
        slot.holder = {
          owner: w.owner,
          fence,
          acquiredAt: now,
          expiresAt: now + w.ttlSeconds * 1000,
          ttlSeconds: w.ttlSeconds,
          metadata: w.metadata,
        };
        slot.lastFence = fence;
        this.deliver(w.clientId, w.seq, ok({ type: 'lock', lock: this.grantView(namespace, key, slot.holder) }));
        break;
      }
    }
    if (slot.holder) {
      const kept: LockWaiter[] = [];
      for (const w of slot.waiters) {
        if (w.waitDeadlineAt <= now) this.deliver(w.clientId, w.seq, this.fail(this.waitTimeout(namespace, key, slot)));
        else kept.push(w);
      }
      slot.waiters = kept;
    }
    if (
      !slot.holder &&
      slot.waiters.length === 0 &&
      slot.freeSince + this.limits.idleLockRetentionSeconds * 1000 <= now
    ) {
      this.dropSlot(namespace, key);
      return undefined;
    }
    this.dueSlot(slot);
    return slot;
  }

  /** Lowers nextDueMs to the slot's earliest deadline. */
  private dueSlot(slot: LockSlot): void {
    if (slot.holder) this.due(slot.holder.expiresAt);
    else this.due(slot.freeSince + this.limits.idleLockRetentionSeconds * 1000);
    for (const w of slot.waiters) this.due(w.waitDeadlineAt);
  }

  private due(ms: number): void {
    if (ms < this.nextDueMs) this.nextDueMs = ms;
  }

  private waitTimeout(namespace: string, key: string, slot: LockSlot): LockHeldError {
    return new LockHeldError(lockName(namespace, key), slot.holder?.owner ?? '', slot.holder?.expiresAt ?? 0);
  }

  private grantView(namespace: string, key: string, h: LockHolder): LockGrant {
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

  private lockInfo(namespace: string, key: string, slot: LockSlot | undefined, now: number): LockInfo {
    const holder = slot?.holder && slot.holder.expiresAt > now ? this.grantView(namespace, key, slot.holder) : null;
    return { namespace, key, holder, lastFence: slot?.lastFence ?? 0, waiters: slot?.waiters.length ?? 0 };
  }

  private readLockList(ns: string, now: number): OpResult {
    const namespace = checkNamespace(this.limits, ns);
    const slots = this.locks.get(namespace);
    const keys = slots ? [...slots.keys()].sort() : [];
    const live = keys
      .map((key) => this.lockInfo(namespace, key, slots?.get(key), now))
      .filter((l) => l.holder !== null || l.waiters > 0);
    const max = this.limits.maxListLimit;
    return { type: 'lock_list', locks: live.slice(0, max), truncated: live.length > max };
  }

  private lockAcquire(
    op: Extract<Operation, { type: 'lock_acquire' }>,
    clientId: string | undefined,
    seq: number | undefined,
  ): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const owner = checkId(this.limits, 'owner', op.owner);
    const ttlSeconds =
      op.ttlSeconds === undefined
        ? this.limits.defaultLockTtlSeconds
        : checkIntInRange('ttlSeconds', op.ttlSeconds, 1, this.limits.maxLockTtlSeconds);
    const metadata = op.metadata === undefined ? null : checkValue(op.metadata, this.limits.maxLockMetadataBytes).value;
    const waitSeconds =
      op.waitSeconds === undefined
        ? 0
        : checkIntInRange('waitSeconds', op.waitSeconds, 0, this.limits.maxLockWaitSeconds);
    if (waitSeconds > 0 && (clientId === undefined || seq === undefined)) {
      throw new InvalidArgumentError('a blocking acquire (waitSeconds > 0) needs a client session');
    }
    const now = this.nowMs;
    let slot = this.normalizedSlot(namespace, key);
    if (slot?.holder) {
      if (waitSeconds === 0)
        throw new LockHeldError(lockName(namespace, key), slot.holder.owner, slot.holder.expiresAt);
      if (slot.waiters.length >= this.limits.maxWaitersPerLock) {
        throw new LockHeldError(lockName(namespace, key), slot.holder.owner, slot.holder.expiresAt);
      }
      const waitDeadlineAt = now + waitSeconds * 1000;
      slot.waiters.push({
        owner,
        ttlSeconds,
        metadata,
        enqueuedAt: now,
        waitDeadlineAt,
        clientId: clientId as string,
        seq: seq as number,
      });
      this.due(waitDeadlineAt);
      return { type: 'lock_waiting', namespace, key, position: slot.waiters.length, waitDeadlineAt };
    }
    if (!slot) {
      let slots = this.locks.get(namespace);
      if (slots && slots.size >= this.limits.maxLocksPerNamespace) {
        for (const k of [...slots.keys()].sort()) this.normalizedSlot(namespace, k);
        slots = this.locks.get(namespace);
        if (slots && slots.size >= this.limits.maxLocksPerNamespace) {
          throw new NamespaceFullError(namespace, this.limits.maxLocksPerNamespace);
        }
      }
      if (!slots) {
        slots = new Map();
        this.locks.set(namespace, slots);
      }
      slot = { holder: null, lastFence: 0, freeSince: now, waiters: [] };
      slots.set(key, slot);
    }
    const fence = this.grantFence(slot);
    slot.holder = { owner, fence, acquiredAt: now, expiresAt: now + ttlSeconds * 1000, ttlSeconds, metadata };
    slot.lastFence = fence;
    this.due(slot.holder.expiresAt);
    return { type: 'lock', lock: this.grantView(namespace, key, slot.holder) };
  }

  /** The live holder matching (owner, fence), or the error explaining why not. */
  private heldBy(namespace: string, key: string, owner: string, fence: number): { slot: LockSlot; holder: LockHolder } {
    const slot = this.normalizedSlot(namespace, key);
    if (slot && fence < slot.lastFence) throw new FenceStaleError(lockName(namespace, key), fence, slot.lastFence);
    const holder = slot?.holder;
    if (!slot || !holder || holder.fence !== fence || holder.owner !== owner) {
      throw new KeyNotFoundError(namespace, key);
    }
    return { slot, holder };
  }

  private lockRenew(op: Extract<Operation, { type: 'lock_renew' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const owner = checkId(this.limits, 'owner', op.owner);
    const fence = checkFenceToken(op.fence);
    const ttl =
      op.ttlSeconds === undefined
        ? undefined
        : checkIntInRange('ttlSeconds', op.ttlSeconds, 1, this.limits.maxLockTtlSeconds);
    const { holder } = this.heldBy(namespace, key, owner, fence);
    const ttlSeconds = ttl ?? holder.ttlSeconds;
    holder.ttlSeconds = ttlSeconds;
    holder.expiresAt = this.nowMs + ttlSeconds * 1000;
    this.due(holder.expiresAt);
    return { type: 'lock', lock: this.grantView(namespace, key, holder) };
  }

  private lockRelease(op: Extract<Operation, { type: 'lock_release' }>): OpResult {
    const namespace = checkNamespace(this.limits, op.namespace);
    const key = checkKey(this.limits, op.key);
    const owner = checkId(this.limits, 'owner', op.owner);
    const fence = checkFenceToken(op.fence);
    const slot = this.normalizedSlot(namespace, key);
    if (!slot?.holder || slot.holder.owner !== owner || slot.holder.fence !== fence) {
      // Not (or no longer) the holder: a retried or late release never frees a newer holder.
      return { type: 'lock_released', released: false };
    }
    slot.holder = null;
    slot.freeSince = this.nowMs;
    this.normalizedSlot(namespace, key);
    return { type: 'lock_released', released: true };
  }

  // ---------------------------------------------------------------- expiry

  private expire(): OpResult {
    const now = this.nowMs;
    if (now < this.nextDueMs) return { type: 'expired', entries: 0, locks: 0, waiters: 0, sessions: 0 };
    // Full scan; recompute the bound from what remains.
    this.nextDueMs = Number.POSITIVE_INFINITY;
    let entries = 0;
    for (const [namespace, map] of [...this.namespaces]) {
      for (const [key, e] of map) {
        if (e.expiresAt <= now) {
          map.delete(key);
          entries++;
        } else this.due(e.expiresAt);
      }
      if (map.size === 0) this.namespaces.delete(namespace);
    }
    let locks = 0;
    let waiters = 0;
    // Key order, not insertion order: a replica restored from a snapshot holds the same slots in
    // another insertion order, and the deliveries this loop emits must come out identical.
    for (const namespace of [...this.locks.keys()].sort()) {
      const slots = this.locks.get(namespace) as Map<string, LockSlot>;
      for (const key of [...slots.keys()].sort()) {
        const before = this.deliveries.length;
        const slot = slots.get(key) as LockSlot;
        const hadExpiredHolder = slot.holder !== null && slot.holder.expiresAt <= now;
        this.normalizedSlot(namespace, key);
        if (hadExpiredHolder) locks++;
        for (let i = before; i < this.deliveries.length; i++) {
          if (!this.deliveries[i]?.result.ok) waiters++;
        }
      }
    }
    let sessions = 0;
    const ttlMs = this.limits.sessionTtlSeconds * 1000;
    for (const [clientId, session] of [...this.sessions]) {
      if (session.lastActiveMs + ttlMs <= now) {
        this.dropSession(clientId);
        sessions++;
      } else this.due(session.lastActiveMs + ttlMs);
    }
    return { type: 'expired', entries, locks, waiters, sessions };
  }

  // ---------------------------------------------------------------- snapshots

  /** The whole state as canonical bytes: identical on every replica at the same applied index. */
  snapshot(): Uint8Array {
    const namespaces = [...this.namespaces.keys()].sort().map((ns) => {
      const map = this.namespaces.get(ns) as Map<string, StoredEntry>;
      return [
        ns,
        [...map.keys()].sort().map((key) => {
          const e = map.get(key) as StoredEntry;
          return [key, e.kind, e.value, e.version, e.ttlSeconds, e.createdAt, e.updatedAt, e.expiresAt];
        }),
      ];
    });
    const locks = [...this.locks.keys()].sort().map((ns) => {
      const slots = this.locks.get(ns) as Map<string, LockSlot>;
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
            s.waiters.map((w) => [
              w.owner,
              w.ttlSeconds,
              w.metadata,
              w.enqueuedAt,
              w.waitDeadlineAt,
              w.clientId,
              w.seq,
            ]),
          ];
        }),
      ];
    });
    const sessions = [...this.sessions].map(([id, s]) => [
      id,
      s.floorSeq,
      s.lastActiveMs,
      [...s.results].map(([seq, c]) => [seq, c.result]),
    ]);
    return encodeSnapshotBody({
      nowMs: this.nowMs,
      index: this.lastIndex,
      term: this.lastTerm,
      namespaces,
      locks,
      sessions,
    } as unknown as JsonValue);
  }

  /** Replaces the whole state with a snapshot's. Throws DecodeError (and changes nothing) on bad bytes. */
  restore(bytes: Uint8Array): void {
    const body = decodeSnapshotBody(bytes);
    const next = parseSnapshot(body);
    this.nowMs = next.nowMs;
    this.lastIndex = next.index;
    this.lastTerm = next.term;
    this.namespaces = next.namespaces;
    this.locks = next.locks;
    this.sessions = next.sessions;
    this.cachedBytes = next.cachedBytes;
    this.nextDueMs = Number.NEGATIVE_INFINITY;
  }
}

// ------------------------------------------------------------------ cursors

function encodeCursor(sortBy: SortBy, sortOrder: SortOrder, sortValue: number | string, key: string): string {
  return base64UrlEncode(utf8Encode(canonicalJson([sortBy, sortOrder, sortValue, key])));
}

function decodeCursor(text: string, sortBy: SortBy, sortOrder: SortOrder): CursorPosition {
  const bad = () => new InvalidArgumentError('cursor is malformed or belongs to another sort', { cursor: text });
  if (text.length > 8192) throw bad();
  const bytes = base64UrlDecode(text);
  if (!bytes) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8Decode(bytes));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw bad();
  const [by, order, sortValue, key] = parsed as unknown[];
  if (by !== sortBy || order !== sortOrder || typeof key !== 'string') throw bad();
  if (sortBy === 'key' ? typeof sortValue !== 'string' : typeof sortValue !== 'number') throw bad();
  return { sortValue: sortValue as number | string, key };
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
    return utf8Length(canonicalJson(value));
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
