/**
 * Pure client-side helpers over the coord operations: typed errors from
 * results, the document CAS retry loop, and lease handles. They do no I/O
 * themselves: every call goes through a caller-supplied async function that
 * submits an operation (through Raft, in the node) and returns its result.
 */
import {
  FenceStaleError,
  InvalidArgumentError,
  isParleyError,
  KeyAlreadyExistsError,
  KeyNotFoundError,
  LeaseLostError,
  LockHeldError,
  LockLostError,
  NamespaceFullError,
  ParleyError,
  ValueTooLargeError,
  VersionMismatchError,
} from '@parley/interface';
import type { JsonValue } from './json.js';
import type { Command, CommandResult, ErrorPayload, LeaseDocument, LeaseView, Operation, OpResult } from './types.js';

/** Rebuilds the typed error class of an error result, so `instanceof` works on the client side. */
export function errorFromPayload(payload: ErrorPayload): ParleyError {
  const d = payload.details as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  let err: ParleyError;
  switch (payload.code) {
    case 'key_not_found':
      err = new KeyNotFoundError(str(d.namespace), str(d.key));
      break;
    case 'key_already_exists':
      err = new KeyAlreadyExistsError(str(d.namespace), str(d.key));
      break;
    case 'version_mismatch':
      err = new VersionMismatchError(str(d.key), str(d.expected), typeof d.actual === 'string' ? d.actual : undefined);
      break;
    case 'lock_held':
      err = new LockHeldError(str(d.lock), str(d.owner), num(d.expiresAt), d.kind === 'lease' ? 'lease' : 'lock');
      break;
    case 'lease_lost':
      // A lock's ended grant names its lock; a lease's, its key and epoch.
      err =
        typeof d.lock === 'string'
          ? new LockLostError(d.lock, str(d.owner), num(d.fence))
          : new LeaseLostError(
              str(d.key),
              num(d.epoch),
              typeof d.currentEpoch === 'number' ? d.currentEpoch : undefined,
            );
      break;
    case 'fence_stale':
      err = new FenceStaleError(str(d.lock), num(d.fence), num(d.current));
      break;
    case 'value_too_large':
      err = new ValueTooLargeError(num(d.sizeBytes), num(d.limitBytes));
      break;
    case 'namespace_full':
      err = new NamespaceFullError(str(d.namespace), num(d.limitKeys));
      break;
    case 'invalid_argument':
      err = new InvalidArgumentError(payload.message, d);
      break;
    default:
      err = new ParleyError(payload.code, payload.message, d);
  }
  if (err.message !== payload.message) Object.defineProperty(err, 'message', { value: payload.message });
  return err;
}

/** The value of an ok result; throws the typed error of a failed one. */
export function unwrap(result: CommandResult): OpResult {
  if (result.ok) return result.value;
  throw errorFromPayload(result.error);
}

/** Submits one operation and resolves with its value, or rejects with its typed error. */
export type CoordCall = (op: Operation) => Promise<OpResult>;

function expectType<T extends OpResult['type']>(result: OpResult, type: T): Extract<OpResult, { type: T }> {
  if (result.type !== type) throw new InvalidArgumentError(`expected a '${type}' result, got '${result.type}'`);
  return result as Extract<OpResult, { type: T }>;
}

// ------------------------------------------------------------------ doc

/** Anything that validates and (optionally) serializes a document value, such as a zod schema. */
export interface DocSchema<T> {
  parse(value: unknown): T;
  serialize?(value: T): JsonValue;
}

/** The conditional-write surface a doc needs. */
export interface DocStore {
  get(key: string): Promise<{ value: JsonValue; version: string } | undefined>;
  set(
    key: string,
    value: JsonValue,
    condition: { ifVersion: string } | { ifNotExists: true },
  ): Promise<{ version: string }>;
  delete(key: string): Promise<void>;
}

export interface DocUpdateOptions<T> {
  /** The value `fn` starts from when the document is absent. Without it an absent document is key_not_found. */
  create?: T;
  /** Attempts before the last conflict is thrown (default 10). */
  maxAttempts?: number;
}

export interface Doc<T> {
  get(): Promise<{ value: T; version: string } | undefined>;
  update(fn: (current: T) => T, options?: DocUpdateOptions<T>): Promise<{ value: T; version: string }>;
  delete(): Promise<void>;
}

/** True for the errors a lost compare-and-swap race produces. */
export function isConflict(err: unknown): boolean {
  return isParleyError(err, 'version_mismatch') || isParleyError(err, 'key_already_exists');
}

/**
 * A document over one key with the compare-and-swap retry loop: read value and
 * version, apply `fn` (to `create` if absent), write with ifVersion (or
 * ifNotExists), and start over on a conflict, up to maxAttempts. `fn` must be
 * pure: it may run several times.
 */
export function doc<T = JsonValue>(store: DocStore, key: string, schema?: DocSchema<T>): Doc<T> {
  const parse = (v: unknown): T => (schema ? schema.parse(v) : (v as T));
  const serialize = (v: T): JsonValue => (schema?.serialize ? schema.serialize(v) : (v as unknown as JsonValue));
  return {
    async get() {
      const found = await store.get(key);
      return found ? { value: parse(found.value), version: found.version } : undefined;
    },
    async update(fn, options = {}) {
      const maxAttempts = options.maxAttempts ?? 10;
      if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
        throw new InvalidArgumentError('maxAttempts must be a positive integer');
      }
      let lastConflict: unknown;
      for (let attempt = 0; attempt < maxAttempts; attempt++) {
        const found = await store.get(key);
        let base: T;
        if (found) base = parse(found.value);
        else if (Object.hasOwn(options, 'create') && options.create !== undefined) base = options.create;
        else throw new KeyNotFoundError('', key);
        const next = fn(base);
        const written = serialize(schema ? parse(serialize(next)) : next);
        try {
          const { version } = await store.set(
            key,
            written,
            found ? { ifVersion: found.version } : { ifNotExists: true },
          );
          return { value: parse(written), version };
        } catch (err) {
          if (!isConflict(err)) throw err;
          lastConflict = err;
        }
      }
      throw lastConflict;
    },
    async delete() {
      await store.delete(key);
    },
  };
}

/** A DocStore over the coord operations of one strong namespace. */
export function coordDocStore(call: CoordCall, namespace: string, options: { ttlSeconds?: number } = {}): DocStore {
  return {
    async get(key) {
      try {
        const got = expectType(await call({ type: 'get', namespace, key }), 'got');
        return { value: got.entry.value, version: got.entry.version };
      } catch (err) {
        if (isParleyError(err, 'key_not_found')) return undefined;
        throw err;
      }
    },
    async set(key, value, condition) {
      const op: Extract<Operation, { type: 'set' }> = { type: 'set', namespace, key, value, ...condition };
      if (options.ttlSeconds !== undefined) op.ttlSeconds = options.ttlSeconds;
      const res = expectType(await call(op), 'entry');
      return { version: res.entry.version };
    },
    async delete(key) {
      await call({ type: 'delete', namespace, key });
    },
  };
}

// ------------------------------------------------------------------ leases

export interface LeaseOptions {
  ttlSeconds: number;
  holder: string;
  /**
   * Makes the acquisition a state transition: receives the current state (null
   * when fresh) and returns the new one, written atomically with the
   * acquisition. Throwing aborts the acquisition and nothing is written. Must
   * be pure: a lost race calls it again.
   */
  stateFn?: (state: JsonValue | null) => JsonValue;
  stealIfExpired?: boolean;
  /** Attempts of the guarded acquisition when stateFn races (default 10). */
  maxAttempts?: number;
}

async function readLease(call: CoordCall, namespace: string, key: string): Promise<LeaseView | undefined> {
  try {
    const got = expectType(await call({ type: 'get', namespace, key }), 'got');
    if (got.entry.kind !== 'lease') {
      throw new InvalidArgumentError(`'${namespace}/${key}' holds a ${got.entry.kind}, not a lease`);
    }
    const d = got.entry.value as unknown as LeaseDocument;
    return { namespace, key, ...d, version: got.entry.version, ttlSeconds: got.entry.ttlSeconds };
  } catch (err) {
    if (isParleyError(err, 'key_not_found')) return undefined;
    throw err;
  }
}

/**
 * Handle on one ownership period (namespace, key, epoch, holder). Every write
 * is fenced by the state machine: once another acquisition bumped the epoch,
 * or the lease was released or deleted, calls reject with LeaseLostError.
 */
export class LeaseHandle {
  private view: LeaseView;
  /** The ownership period this handle stands for; fixed for the handle's life. */
  readonly holder: string;
  readonly epoch: number;

  constructor(
    private readonly call: CoordCall,
    view: LeaseView,
    readonly ttlSeconds: number,
  ) {
    this.view = view;
    this.holder = view.holder ?? '';
    this.epoch = view.epoch;
  }

  get namespace(): string {
    return this.view.namespace;
  }
  get key(): string {
    return this.view.key;
  }
  get deadlineAt(): number {
    return this.view.deadlineAt;
  }
  get state(): JsonValue {
    return this.view.state;
  }
  /** The lease document's version this handle last observed. */
  get version(): string {
    return this.view.version;
  }

  private async submit(op: Operation): Promise<LeaseView> {
    const res = expectType(await this.call(op), 'lease');
    this.view = res.lease;
    return res.lease;
  }

  /** Extends the deadline by the handle's TTL and picks up any cooperative state change. */
  async renew(): Promise<void> {
    await this.submit({
      type: 'lease_renew',
      namespace: this.namespace,
      key: this.key,
      holder: this.holder,
      epoch: this.epoch,
      ttlSeconds: this.ttlSeconds,
    });
  }

  /** Replaces the state unconditionally (still fenced): discards cooperative writes not yet read. */
  async write(state: JsonValue): Promise<void> {
    await this.submit({
      type: 'lease_write',
      namespace: this.namespace,
      key: this.key,
      holder: this.holder,
      epoch: this.epoch,
      state,
    });
  }

  /**
   * Guarded read-modify-write: a conditional write on the state version. A
   * cooperative write in between (same epoch and holder) is absorbed and `fn`
   * re-applied to the fresh state; a lost lease rejects with LeaseLostError.
   */
  async updateState(fn: (state: JsonValue) => JsonValue, maxAttempts = 10): Promise<JsonValue> {
    let lastConflict: unknown;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      const next = fn(this.view.state);
      try {
        const v = await this.submit({
          type: 'lease_write',
          namespace: this.namespace,
          key: this.key,
          holder: this.holder,
          epoch: this.epoch,
          state: next,
          ifVersion: this.version,
        });
        return v.state;
      } catch (err) {
        if (!isParleyError(err, 'version_mismatch')) throw err;
        lastConflict = err;
        const fresh = await readLease(this.call, this.namespace, this.key);
        if (!fresh || fresh.epoch !== this.epoch || fresh.holder !== this.holder) {
          throw new LeaseLostError(`${this.namespace}/${this.key}`, this.epoch, fresh?.epoch);
        }
        this.view = fresh;
      }
    }
    throw lastConflict;
  }

  /** Records an optional final state and gives the lease up; the document (and its epoch) stays. */
  async release(state?: JsonValue): Promise<void> {
    const op: Operation = {
      type: 'lease_release',
      namespace: this.namespace,
      key: this.key,
      holder: this.holder,
      epoch: this.epoch,
    };
    if (state !== undefined) op.state = state;
    await this.submit(op);
  }
}

/**
 * Acquires (or steals an expired) lease, bumping its epoch. Resolves undefined
 * when someone else actively holds it. With `stateFn`, the acquisition is a
 * guarded transition retried on races.
 */
export async function acquireLease(
  call: CoordCall,
  namespace: string,
  key: string,
  options: LeaseOptions,
): Promise<LeaseHandle | undefined> {
  const maxAttempts = options.maxAttempts ?? 10;
  let lastConflict: unknown;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const op: Extract<Operation, { type: 'lease_acquire' }> = {
      type: 'lease_acquire',
      namespace,
      key,
      holder: options.holder,
      ttlSeconds: options.ttlSeconds,
    };
    if (options.stealIfExpired !== undefined) op.stealIfExpired = options.stealIfExpired;
    if (options.stateFn) {
      const current = await readLease(call, namespace, key);
      op.state = options.stateFn(current ? current.state : null);
      if (current) op.ifVersion = current.version;
      else op.ifNotExists = true;
    }
    try {
      const res = expectType(await call(op), 'lease');
      return new LeaseHandle(call, res.lease, options.ttlSeconds);
    } catch (err) {
      if (isParleyError(err, 'lock_held')) return undefined;
      if (!options.stateFn || !isConflict(err)) throw err;
      lastConflict = err;
    }
  }
  throw lastConflict;
}

/**
 * Re-enters the caller's own live ownership period: one read, no write, no
 * epoch bump. Undefined when the lease is absent, released, held by someone
 * else or expired (an expired lease is resumed with acquireLease instead).
 */
export async function attachLease(
  call: CoordCall,
  namespace: string,
  key: string,
  holder: string,
  ttlSeconds: number,
): Promise<LeaseHandle | undefined> {
  const res = await call({ type: 'lease_attach', namespace, key, holder });
  if (res.type === 'lease_absent') return undefined;
  return new LeaseHandle(call, expectType(res, 'lease').lease, ttlSeconds);
}

/**
 * Changes a lease's state from outside the lease, keeping epoch, holder and
 * deadline: a CAS loop on the lease document's version.
 */
export async function cooperativeWrite(
  call: CoordCall,
  namespace: string,
  key: string,
  fn: (state: JsonValue | null) => JsonValue,
  maxAttempts = 10,
): Promise<LeaseView> {
  let lastConflict: unknown;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const current = await readLease(call, namespace, key);
    const op: Extract<Operation, { type: 'lease_cooperative_write' }> = {
      type: 'lease_cooperative_write',
      namespace,
      key,
      state: fn(current ? current.state : null),
    };
    if (current) op.ifVersion = current.version;
    else op.ifNotExists = true;
    try {
      return expectType(await call(op), 'lease').lease;
    } catch (err) {
      if (!isConflict(err)) throw err;
      lastConflict = err;
    }
  }
  throw lastConflict;
}

// ------------------------------------------------------------------ sessions

/**
 * Numbers one client session's commands for exactly-once application: each
 * new command gets the next seq and acknowledges everything below the oldest
 * command still in flight, so the state machine can forget those results. A
 * retry re-proposes the same command (same seq) with a fresh `nowMs`.
 *
 * The session's window bounds the seqs between the oldest unanswered command
 * and the newest one, not only the commands in flight: while one command
 * waits for an answer (lost and retried, or a blocking lock wait), at most
 * `window − 1` later commands may follow it. With a window no larger than the
 * state machine's `maxResultsPerSession`, the answer of every command still in
 * flight stays remembered, so its retry finds it whatever the session's
 * traffic meanwhile (the global `maxCachedResultBytes` bound aside).
 */
export class SessionSequencer {
  private nextSeq = 1;
  private readonly inFlight = new Set<number>();

  constructor(
    readonly clientId: string,
    /** Seqs from the oldest unanswered command to the newest (at most the state machine's 64 remembered results). */
    readonly window = 32,
  ) {}

  /** A new command for `op`; throws InvalidArgumentError when the window is full (`room` is 0). */
  command(op: Operation, nowMs: number): Command {
    if (this.room <= 0) {
      throw new InvalidArgumentError(
        `session '${this.clientId}' has no room in its window of ${this.window} commands (oldest unanswered: ${this.ackSeq() + 1})`,
      );
    }
    const seq = this.nextSeq++;
    this.inFlight.add(seq);
    return { nowMs, clientId: this.clientId, seq, ackSeq: this.ackSeq(), op };
  }

  /** The same command again (after a timeout or leader change), restamped. */
  retry(command: Command, nowMs: number): Command {
    return { ...command, nowMs, ackSeq: this.ackSeq() };
  }

  /** Marks `seq` answered: its result will not be asked for again. */
  done(seq: number): void {
    this.inFlight.delete(seq);
  }

  /** Every seq at or below this has been answered. */
  ackSeq(): number {
    let lowest = this.nextSeq;
    for (const seq of this.inFlight) if (seq < lowest) lowest = seq;
    return lowest - 1;
  }

  /** Commands in flight. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Seqs issued since the oldest unanswered one, that one included (0 when none is in flight). */
  get span(): number {
    return this.nextSeq - 1 - this.ackSeq();
  }

  /** Commands that may still be issued before the oldest unanswered one is answered. */
  get room(): number {
    return this.window - this.span;
  }
}
