/**
 * Typed errors shared by every Parley package.
 *
 * Each condition is one class with a stable `code` (never reworded once shipped)
 * and the HTTP status the server maps it to. The table below is the single
 * source of truth for code → status; the HTTP layer and the CLI read it.
 */

export const ERROR_STATUS = {
  key_not_found: 404,
  key_already_exists: 409,
  version_mismatch: 409,
  lock_held: 409,
  lease_lost: 409,
  fence_stale: 409,
  namespace_full: 409,
  value_too_large: 413,
  invalid_argument: 400,
  decode_error: 400,
  clock_drift: 400,
  unauthorized: 401,
  not_leader: 503,
  unavailable: 503,
  timeout: 504,
  /** A bounded-staleness read the member asked could not prove within its bound (retry, or read elsewhere). */
  staleness_exceeded: 503,
  /** The node asked has not yet seen what the call's session token covers, within the call's wait (retry, or ask elsewhere). */
  session_behind: 503,
  outcome_unknown: 504,
  /** A watch's resume point is no longer kept (HTTP 410 Gone): watch again, then list. */
  compacted: 410,
  log_unavailable: 500,
  storage_corrupt: 500,
  storage_full: 507,
  storage_unwritable: 507,
  storage_failed: 500,
  closed: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Codes a client may retry as is (possibly against the hinted leader). */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'not_leader',
  'unavailable',
  'timeout',
  'closed',
  'staleness_exceeded',
  'session_behind',
]);

export class ParleyError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.details = details;
    this.name = new.target.name;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }

  toJSON(): { code: ErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: { ...this.details } };
  }
}

export class KeyNotFoundError extends ParleyError {
  constructor(namespace: string, key: string) {
    super('key_not_found', `key '${key}' not found in namespace '${namespace}'`, {
      namespace,
      key,
    });
  }
}

export class KeyAlreadyExistsError extends ParleyError {
  constructor(namespace: string, key: string) {
    super('key_already_exists', `key '${key}' already exists in namespace '${namespace}'`, {
      namespace,
      key,
    });
  }
}

export class VersionMismatchError extends ParleyError {
  constructor(key: string, expected: string, actual: string | undefined) {
    super('version_mismatch', `version mismatch on '${key}': expected ${expected}, actual ${actual ?? 'none'}`, {
      key,
      expected,
      actual: actual ?? null,
    });
  }
}

/** Someone else holds a lock, or a lease (`kind` 'lease': its messages say lease, not lock). */
export class LockHeldError extends ParleyError {
  constructor(lock: string, owner: string, expiresAt: number, kind: 'lock' | 'lease' = 'lock') {
    super(
      'lock_held',
      kind === 'lease' ? `lease on '${lock}' is held by '${owner}'` : `lock '${lock}' is held by '${owner}'`,
      kind === 'lease' ? { lock, owner, expiresAt, kind } : { lock, owner, expiresAt },
    );
  }
}

export class LeaseLostError extends ParleyError {
  constructor(key: string, epoch: number, currentEpoch: number | undefined) {
    super('lease_lost', `lease on '${key}' at epoch ${epoch} is no longer held`, {
      key,
      epoch,
      currentEpoch: currentEpoch ?? null,
    });
  }
}

/**
 * A lock renewal by a grant that has ended (its TTL ran out, or it was released): code
 * `lease_lost`, as for a lease. A renewal by someone who does not hold a held lock is `lock_held`.
 */
export class LockLostError extends ParleyError {
  constructor(lock: string, owner: string, fence: number) {
    super('lease_lost', `lock '${lock}': the grant of fence ${fence} to '${owner}' has ended (expired or released)`, {
      lock,
      owner,
      fence,
    });
  }
}

/**
 * A write fenced by a grant that is no longer the newest. `current` 0: no lock is known on the
 * key at all (it was never locked, or it has been free past the lock retention), so the message
 * says that rather than naming a fence 0 that was never granted.
 */
export class FenceStaleError extends ParleyError {
  constructor(lock: string, fence: number, current: number) {
    const why =
      current === 0
        ? `no lock is held or known on '${lock}' (never locked, or free past the lock retention): acquire the lock first`
        : `${current} was granted since`;
    super('fence_stale', `fence ${fence} on '${lock}' is stale: ${why}`, {
      lock,
      fence,
      current,
    });
  }
}

export class ValueTooLargeError extends ParleyError {
  constructor(sizeBytes: number, limitBytes: number) {
    super('value_too_large', `value of ${sizeBytes} bytes exceeds the ${limitBytes}-byte limit`, {
      sizeBytes,
      limitBytes,
    });
  }
}

export class NamespaceFullError extends ParleyError {
  constructor(namespace: string, limitKeys: number) {
    super('namespace_full', `namespace '${namespace}' already holds ${limitKeys} live keys`, {
      namespace,
      limitKeys,
    });
  }
}

/**
 * A bounded-staleness read that the member asked cannot answer within its
 * bound: it has no read point fresh enough from its leader, or has not
 * applied through it (retryable: a moment later, or on another member).
 */
export class StalenessExceededError extends ParleyError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('staleness_exceeded', message, details);
  }
}

/**
 * A call with a session token reached a node that has not seen everything the
 * token covers (writes of the session, or writes its reads saw), and it did not
 * catch up within the call's wait: nothing was read or written (retryable: a
 * moment later, or on another node). Never answered with less than the token.
 */
export class SessionBehindError extends ParleyError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('session_behind', message, details);
  }
}

export class InvalidArgumentError extends ParleyError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('invalid_argument', message, details);
  }
}

/** Untrusted bytes that do not decode. Decoders throw nothing else. */
export class DecodeError extends ParleyError {
  constructor(message: string, offset?: number) {
    super('decode_error', offset === undefined ? message : `${message} at byte ${offset}`, {
      offset: offset ?? null,
    });
  }
}

/** A remote clock reading further ahead than the configured drift bound. */
export class ClockDriftError extends ParleyError {
  constructor(remoteMs: number, localMs: number, maxDriftMs: number) {
    super('clock_drift', `remote timestamp ${remoteMs} is ${remoteMs - localMs} ms ahead (bound ${maxDriftMs} ms)`, {
      remoteMs,
      localMs,
      maxDriftMs,
    });
  }
}

export class UnauthorizedError extends ParleyError {
  constructor(message = 'unauthorized') {
    super('unauthorized', message);
  }
}

export class NotLeaderError extends ParleyError {
  readonly leaderHint: string | undefined;
  constructor(leaderHint?: string) {
    super('not_leader', leaderHint ? `not the leader; try ${leaderHint}` : 'not the leader', {
      leaderHint: leaderHint ?? null,
    });
    this.leaderHint = leaderHint;
  }
}

export class UnavailableError extends ParleyError {
  constructor(message = 'unavailable', details: Record<string, unknown> = {}) {
    super('unavailable', message, details);
  }
}

export class TimeoutError extends ParleyError {
  constructor(message = 'timed out', details: Record<string, unknown> = {}) {
    super('timeout', message, details);
  }
}

/**
 * A write reached the state machine, but its answer was lost and can no
 * longer be recovered: it may have been applied (once) or not, and it will not
 * be applied later. Not retryable as is: read the state to learn the outcome
 * before re-issuing a write that is not idempotent.
 *
 * An eventual write gossiped before it was durable (`gossipBeforeDurable`)
 * and then not made durable on its node also ends so: peers may hold it, and
 * then it reaches every replica, its origin included (once), later.
 */
export class OutcomeUnknownError extends ParleyError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('outcome_unknown', message, details);
  }
}

/** Raft storage: the requested index precedes the first retained entry. */
export class CompactedError extends ParleyError {
  constructor(index: number, firstIndex: number) {
    super('compacted', `log index ${index} is compacted (first index ${firstIndex})`, {
      index,
      firstIndex,
    });
  }
}

/** Raft storage: the requested index is past the last entry. */
export class LogUnavailableError extends ParleyError {
  constructor(index: number, lastIndex: number) {
    super('log_unavailable', `log index ${index} is not available (last index ${lastIndex})`, {
      index,
      lastIndex,
    });
  }
}

/** A stored record failed its checksum or does not decode. */
export class StorageCorruptError extends ParleyError {
  constructor(store: string, message: string) {
    super('storage_corrupt', `store '${store}' is corrupt: ${message}`, { store });
  }
}

/**
 * The node's own disk refused a write: full (ENOSPC, EDQUOT). The write changed
 * nothing; the store refuses further writes until the node is restarted with
 * space freed (after a failed write LevelDB cannot vouch for its log).
 */
export class StorageFullError extends ParleyError {
  constructor(store: string, message: string) {
    super('storage_full', `store '${store}' is out of space: ${message}`, { store });
  }
}

/** The node's own data directory cannot be written: read-only or permission denied (EROFS, EACCES, EPERM). */
export class StorageUnwritableError extends ParleyError {
  constructor(store: string, message: string) {
    super('storage_unwritable', `store '${store}' cannot be written: ${message}`, { store });
  }
}

/** Any other I/O failure of the node's own disk (EIO, a failed sync): the store refuses writes from then on. */
export class StorageFailedError extends ParleyError {
  constructor(store: string, message: string) {
    super('storage_failed', `store '${store}' failed: ${message}`, { store });
  }
}

/** The component was stopped or closed. */
export class ClosedError extends ParleyError {
  constructor(what: string) {
    super('closed', `${what} is closed`);
  }
}

export function isParleyError(err: unknown, code?: ErrorCode): err is ParleyError {
  return err instanceof ParleyError && (code === undefined || err.code === code);
}
