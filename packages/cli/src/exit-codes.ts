/**
 * Exit codes of `parley`, by error class: one table, read by every command.
 * Scripts branch on these, so they never change meaning.
 */
export const EXIT = {
  ok: 0,
  /** Unexpected failure: a server-side bug, corrupt storage. */
  failure: 1,
  /** The request was wrong: bad flags, bad JSON, invalid argument, value too large. */
  usage: 2,
  /** The key (or route) does not exist, or has expired; or a watch's resume point is no longer kept (`compacted`). */
  notFound: 3,
  /** A conditional write or a lock lost a race: version mismatch, key exists, lock held, lease lost, stale fence, namespace full. */
  conflict: 4,
  /** Missing or wrong PARLEY_API_TOKEN, or a token-less server refused the Host or Origin. */
  unauthorized: 5,
  /** Retry later: no leader, unavailable, timeout, a bounded read too stale, a node behind the session (`--session`), or the server cannot be reached. */
  unavailable: 6,
  /** The node's own disk refused: full, read-only, permission denied or failing (an operator must act). */
  storage: 7,
  /** A write's answer was lost for good: it was applied once or not at all. Read before retrying. */
  outcomeUnknown: 8,
} as const;

const BY_CODE: Record<string, number> = {
  invalid_argument: EXIT.usage,
  decode_error: EXIT.usage,
  value_too_large: EXIT.usage,
  clock_drift: EXIT.usage,
  method_not_allowed: EXIT.usage,
  unsupported_media_type: EXIT.usage,
  key_not_found: EXIT.notFound,
  not_found: EXIT.notFound,
  compacted: EXIT.notFound,
  key_already_exists: EXIT.conflict,
  version_mismatch: EXIT.conflict,
  lock_held: EXIT.conflict,
  lease_lost: EXIT.conflict,
  fence_stale: EXIT.conflict,
  namespace_full: EXIT.conflict,
  unauthorized: EXIT.unauthorized,
  forbidden_host: EXIT.unauthorized,
  forbidden_origin: EXIT.unauthorized,
  not_leader: EXIT.unavailable,
  unavailable: EXIT.unavailable,
  timeout: EXIT.unavailable,
  staleness_exceeded: EXIT.unavailable,
  session_behind: EXIT.unavailable,
  outcome_unknown: EXIT.outcomeUnknown,
  closed: EXIT.unavailable,
  too_many_streams: EXIT.unavailable,
  storage_full: EXIT.storage,
  storage_unwritable: EXIT.storage,
  storage_failed: EXIT.storage,
};

export function exitCodeOf(errorCode: string): number {
  return BY_CODE[errorCode] ?? EXIT.failure;
}
