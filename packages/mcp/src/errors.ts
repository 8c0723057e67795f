/**
 * Typed tool errors: every failure a tool returns names a stable Parley error code
 * (the HTTP API's `error`) and tells the agent what to do next.
 */

/** What an agent should do after each error code. */
export const ERROR_HINTS: Readonly<Record<string, string>> = {
  invalid_argument: 'The arguments are malformed; fix them (see the tool schema) and call again.',
  unauthorized: 'The node requires a token: start the MCP server with PARLEY_API_TOKEN set.',
  forbidden_host:
    'The node has no token and answers only loopback host names: use an endpoint on localhost or 127.0.0.1 (or start it with --allow-host).',
  forbidden_origin: 'The node has no token and refuses requests from a web origin that is not loopback.',
  key_not_found: 'The key is absent or expired. Create it, or treat it as missing.',
  not_found: 'No such resource on the node.',
  method_not_allowed: 'A bug in the MCP server (it called a route with the wrong method); report it.',
  unsupported_media_type: 'A bug in the MCP server (it sent a body that is not JSON); report it.',
  key_already_exists: 'Someone created it first (if_not_exists lost). Read the current value instead.',
  version_mismatch:
    'Someone wrote since you read. Re-read the entry with state_get, re-apply your change to the new value, and retry with its version.',
  lock_held: 'Another owner holds it. Wait (lock_acquire with wait_seconds) or try again after its TTL.',
  lease_lost:
    'Your lease has a newer epoch, another holder, or was released: stop working on it; acquire it again before writing.',
  fence_stale: 'A newer lock holder exists: your fence is stale. Stop, and acquire the lock again before writing.',
  namespace_full: 'The namespace has 10,000 live keys; delete some or use another namespace.',
  value_too_large: 'The value is over 1 MiB of JSON; store less, or split it over several keys.',
  not_leader: 'The cluster is changing leader: retry in a moment.',
  unavailable: 'The node or its cluster is unavailable: retry in a moment.',
  closed: 'The node is shutting down: retry against another node.',
  staleness_exceeded:
    'The node could not prove its copy fresh enough for max_staleness_ms / max_lag_entries: retry in a moment, widen the bound, or read with consistency linearizable.',
  session_behind:
    'The node has not yet seen everything your session token covers (your earlier writes, or what your reads saw): nothing was done. Retry in a moment with the same session, or call another node.',
  too_many_streams: 'The server is at its limit of streams: retry later.',
  timeout:
    'No answer in time: a write may or may not have been applied, and may still apply. A retry is a new write: re-read the entry (state_get) before retrying a create (if_not_exists), claim, compare-and-swap or lock acquire; reads and plain overwrites may be retried as they are.',
  outcome_unknown:
    'The write reached the cluster but its answer was lost for good: it was applied once or not at all, and will not apply later. Re-read the entry (state_get) to see which before writing again, never retry it blindly; an acquire may hold the lock or lease under your name until its TTL ends.',
  storage_full:
    "The node's disk is full: nothing was written. Use another node; an operator must free space and restart it.",
  storage_unwritable:
    "The node's data directory cannot be written (read-only or permission denied): nothing was written. Use another node.",
  storage_failed: "The node's disk failed: use another node; an operator must check it and restart the node.",
  internal: 'A bug in Parley; report it.',
  transport:
    'The MCP server could not reach the node over HTTP (not running, restarting, or a wrong endpoint): retry in a moment; if it persists, check that the node runs at the endpoint. A write may or may not have reached it: re-read before retrying a create, claim or compare-and-swap.',
};

/** A failure of a node call, as returned to the agent. */
export class ToolError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string) {
    super(message);
    this.name = 'ToolError';
    this.code = code;
    this.status = status;
  }

  /** The JSON an agent receives: `{ error, status, message, retryable, hint }`. */
  toJSON(): { error: string; status: number; message: string; retryable: boolean; hint: string } {
    return {
      error: this.code,
      status: this.status,
      message: this.message,
      retryable: RETRYABLE.has(this.code),
      hint: ERROR_HINTS[this.code] ?? 'Unexpected error.',
    };
  }
}

const RETRYABLE = new Set([
  'not_leader',
  'unavailable',
  'closed',
  'too_many_streams',
  'session_behind',
  'timeout',
  'version_mismatch',
  'transport',
]);
