/**
 * CoordStateMachine: the deterministic state machine behind every strong
 * operation. Raft hands it committed commands in log order; it reads time only
 * from the commands, so every replica computes the same results and the same
 * snapshot bytes.
 *
 * This file holds the public class and the dispatch: time, log positions and
 * exactly-once sessions around each command. The operations live by concern
 * in entries.ts, leases.ts, locks.ts, sessions.ts, expiry.ts and snapshot.ts,
 * as functions over the Machine (machine-state.ts) that holds the state.
 */
import { type DecodeError, InvalidArgumentError, ParleyError } from '@parley/interface';
import { decodeCommand } from './codec.js';
import { claim, deleteEntry, deleteNamespace, readGet, readList, setEntry, setMismatch } from './entries.js';
import { expire } from './expiry.js';
import { cooperativeWrite, leaseAcquire, leaseRelease, leaseRenew, leaseWrite, readAttach } from './leases.js';
import { findSlot, lockAcquire, lockInfo, lockRelease, lockRenew, normalizedSlot, readLockList } from './locks.js';
import { errorPayload, fail, MAX_TIME_MS, Machine, ok, type Session } from './machine-state.js';
import { ackSession, registerSession, remember, touchSession } from './sessions.js';
import { restoreInto, snapshotBytes } from './snapshot.js';
import {
  type ApplyOutput,
  type Command,
  type CommandResult,
  type CoordConfig,
  type CoordLimits,
  DEFAULT_LIMITS,
  type LogPosition,
  type Operation,
  type OpResult,
  READ_OPERATIONS,
} from './types.js';
import { checkIntInRange, checkKey, checkNamespace } from './validate.js';

export type { CachedResult, LockHolder, LockSlot, LockWaiter, Session, StoredEntry } from './machine-state.js';
export { MAX_TIME_MS } from './machine-state.js';

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
  private readonly s: Machine;

  constructor(config: CoordConfig = {}) {
    const limits = Object.freeze({ ...DEFAULT_LIMITS, ...(config.limits ?? {}) });
    checkIntInRange('maxTimeStepMs', limits.maxTimeStepMs, 1, MAX_TIME_MS);
    this.s = new Machine(limits, config.versionKey ?? '');
  }

  get limits(): Readonly<CoordLimits> {
    return this.s.limits;
  }

  /**
   * State-machine time: the largest command stamp applied so far, except that
   * one command advances it by at most `limits.maxTimeStepMs`.
   */
  get timeMs(): number {
    return this.s.nowMs;
  }

  /**
   * A lower bound on the earliest deadline `expire` acts on (entry and lock
   * expiry, waiter timeouts, idle-slot retention, session expiry), in
   * state-machine time: +Infinity when nothing can fall due, -Infinity after
   * a restore until the next `expire` has scanned. While `timeMs` is below
   * it, an `expire` changes nothing but the time.
   */
  get nextDueMs(): number {
    return this.s.nextDueMs;
  }

  /** The log position of the last applied command (or of the restored snapshot). */
  get applied(): LogPosition {
    return { index: this.s.lastIndex, term: this.s.lastTerm };
  }

  get sessionCount(): number {
    return this.s.sessions.size;
  }

  /**
   * The version stored for namespace/key in this state, expired or not
   * (undefined: none stored). A token stored at an applied state was minted
   * at a committed log position, and no later write mints it again.
   */
  storedVersion(namespace: string, key: string): string | undefined {
    return this.s.namespaces.get(namespace)?.get(key)?.version;
  }

  /**
   * Whether `apply` would answer `command` from its session's remembered
   * results (a retry appended to the log again): applying it changes nothing.
   */
  isAnswered(command: Command): boolean {
    if (command.clientId === undefined || typeof command.seq !== 'number') return false;
    return this.s.sessions.get(command.clientId)?.results.has(command.seq) ?? false;
  }

  /**
   * The answer `apply` would surely give `command` at time `nowMs` (as
   * `query` judges it), when that answer is a failure that changes nothing:
   * a `set` with `ifVersion` whose expected version is not the key's
   * (entries.ts `setMismatch`), on the command's first attempt (`retry`
   * false: the caller has sent it nowhere before), of a live session whose
   * table neither remembers nor has passed the seq — a command the table
   * knows may have been applied, and is answered only by `apply`. undefined
   * otherwise. Changes
   * nothing, not even the session's activity. Version tokens are unique per
   * log position, so a version that is not the key's at a committed state is
   * not the key's at any later one: applying the command later fails too.
   * The caller answers from it only at a linearizable read point
   * (docs/guarantees.md, "A CAS that is sure to fail").
   */
  doomed(command: Omit<Command, 'nowMs'>, at: { nowMs?: number; retry: boolean }): CommandResult | undefined {
    const op = command.op;
    if (op?.type !== 'set' || op.ifVersion === undefined) return undefined;
    const { clientId, seq } = command;
    if (clientId === undefined || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return undefined;
    const session = this.s.sessions.get(clientId);
    // Only a first attempt, and one the table does not know: it cannot have been applied.
    if (at.retry || !session || seq <= session.floorSeq || session.results.has(seq)) return undefined;
    const err = setMismatch(this.s, op, this.readTime(at.nowMs));
    return err === undefined ? undefined : fail(err);
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
    this.s.stampMs = Math.max(this.s.nowMs, stamp ?? 0);
    if (stamp === undefined) {
      const err = new InvalidArgumentError(`command nowMs must be an integer in 0..${MAX_TIME_MS}`, {
        nowMs: raw ?? null,
      });
      return { result: fail(err), deliveries: [] };
    }
    this.s.index = position.index;
    this.s.term = position.term;
    this.s.deliveries = [];
    this.s.removedKeys = [];
    const result = this.applyCommand(command);
    const deliveries = this.s.deliveries;
    const removedKeys = this.s.removedKeys;
    this.s.deliveries = [];
    this.s.removedKeys = [];
    return removedKeys.length === 0 ? { result, deliveries } : { result, deliveries, removedKeys };
  }

  /** The time `advance` would move state-machine time to for a stamp of `nowMs` (unchanged by a read). */
  private readTime(nowMs: number | undefined): number {
    const sm = this.s.nowMs;
    if (nowMs === undefined || nowMs <= sm) return sm;
    return sm === 0 ? nowMs : Math.min(nowMs, sm + this.s.limits.maxTimeStepMs);
  }

  private advance(position: LogPosition, stamp: number | undefined): void {
    if (!Number.isSafeInteger(position.index) || position.index <= this.s.lastIndex) {
      throw new InvalidArgumentError(
        `apply at index ${position.index} after ${this.s.lastIndex}: indexes must increase`,
      );
    }
    this.s.lastIndex = position.index;
    this.s.lastTerm = position.term;
    if (stamp !== undefined && stamp > this.s.nowMs) {
      // The first stamped command sets the clock; after that one command moves it at most
      // maxTimeStepMs, so a leader whose clock stepped ahead cannot expire everything at once.
      this.s.nowMs = this.s.nowMs === 0 ? stamp : Math.min(stamp, this.s.nowMs + this.s.limits.maxTimeStepMs);
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
      session = this.s.sessions.get(clientId);
      if (session) {
        touchSession(this.s, clientId, session);
        if (typeof command.ackSeq === 'number' && Number.isSafeInteger(command.ackSeq)) {
          ackSession(this.s, session, command.ackSeq);
        }
      }
      if (!isRead && op.type !== 'expire') {
        if (!session) {
          return fail(
            new InvalidArgumentError(`client session '${clientId}' is unknown or expired: register a new one`, {
              reason: 'session_expired',
              clientId,
            }),
          );
        }
        const seq = command.seq;
        if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
          return fail(new InvalidArgumentError('a command with a session needs a seq ≥ 1'));
        }
        const cached = session.results.get(seq);
        if (cached) return cached.result;
        if (seq <= session.floorSeq) {
          return fail(
            new InvalidArgumentError(`seq ${seq} of session '${clientId}' is older than its remembered results`, {
              reason: 'stale_sequence',
              clientId,
              seq,
            }),
          );
        }
        const result = this.execute(op, clientId, seq);
        remember(this.s, clientId, session, seq, result);
        return result;
      }
    }
    return this.execute(op, undefined, undefined);
  }

  private execute(op: Operation, clientId: string | undefined, seq: number | undefined): CommandResult {
    try {
      return ok(this.run(op, clientId, seq));
    } catch (err) {
      if (err instanceof ParleyError) return fail(err);
      throw err;
    }
  }

  /**
   * Answers a read-only operation (get, list, lease_attach, lock_inspect,
   * lock_list) from the current state without changing it. Use after a
   * ReadIndex/lease read. It judges expiry at the time a command stamped
   * `nowMs` would move state-machine time to (`nowMs`, but at most
   * `maxTimeStepMs` past state-machine time, never before it), so a read
   * agrees with a conditional write issued at the same moment even when
   * state-machine time lags the clocks.
   */
  query(op: Operation, nowMs?: number): CommandResult {
    const now = this.readTime(nowMs);
    try {
      switch (op.type) {
        case 'get':
          return ok(readGet(this.s, op.namespace, op.key, now));
        case 'list':
          return ok(readList(this.s, op, now));
        case 'lease_attach':
          return ok(readAttach(this.s, op.namespace, op.key, op.holder, now));
        case 'lock_inspect': {
          const namespace = checkNamespace(this.s.limits, op.namespace);
          const key = checkKey(this.s.limits, op.key);
          return ok({
            type: 'lock_info',
            lock: lockInfo(namespace, key, findSlot(this.s, namespace, key), now),
          });
        }
        case 'lock_list':
          return ok(readLockList(this.s, op.namespace, now));
        default:
          throw new InvalidArgumentError(`'${op.type}' is not a read-only operation`);
      }
    } catch (err) {
      if (err instanceof ParleyError) return fail(err);
      throw err;
    }
  }

  private run(op: Operation, clientId: string | undefined, seq: number | undefined): OpResult {
    const now = this.s.nowMs;
    switch (op.type) {
      case 'register_session':
        return registerSession(this.s);
      case 'noop':
        return { type: 'noop' };
      case 'expire':
        return expire(this.s);
      case 'set':
        return setEntry(this.s, op);
      case 'get':
        return readGet(this.s, op.namespace, op.key, now);
      case 'delete':
        return deleteEntry(this.s, op);
      case 'list':
        return readList(this.s, op, now);
      case 'delete_namespace':
        return deleteNamespace(this.s, op);
      case 'claim':
        return claim(this.s, op);
      case 'lease_acquire':
        return leaseAcquire(this.s, op);
      case 'lease_renew':
        return leaseRenew(this.s, op);
      case 'lease_write':
        return leaseWrite(this.s, op);
      case 'lease_release':
        return leaseRelease(this.s, op);
      case 'lease_cooperative_write':
        return cooperativeWrite(this.s, op);
      case 'lease_attach':
        return readAttach(this.s, op.namespace, op.key, op.holder, now);
      case 'lock_acquire':
        return lockAcquire(this.s, op, clientId, seq);
      case 'lock_renew':
        return lockRenew(this.s, op);
      case 'lock_release':
        return lockRelease(this.s, op);
      case 'lock_inspect': {
        const namespace = checkNamespace(this.s.limits, op.namespace);
        const key = checkKey(this.s.limits, op.key);
        const slot = normalizedSlot(this.s, namespace, key);
        return { type: 'lock_info', lock: lockInfo(namespace, key, slot, now) };
      }
      case 'lock_list': {
        const namespace = checkNamespace(this.s.limits, op.namespace);
        const slots = this.s.locks.get(namespace);
        // Key order: deliveries must come out the same on a replica restored from a snapshot.
        if (slots) for (const key of [...slots.keys()].sort()) normalizedSlot(this.s, namespace, key);
        return readLockList(this.s, namespace, now);
      }
      default:
        throw new InvalidArgumentError(`unknown operation '${(op as { type: unknown }).type}'`);
    }
  }

  /** The whole state as canonical bytes: identical on every replica at the same applied index. */
  snapshot(): Uint8Array {
    return snapshotBytes(this.s);
  }

  /** Replaces the whole state with a snapshot's. Throws DecodeError (and changes nothing) on bad bytes. */
  restore(bytes: Uint8Array): void {
    restoreInto(this.s, bytes);
  }
}
