/**
 * @parley/coord — the deterministic state machine Raft applies for Parley's
 * strong entries: versioned entries with CAS and TTL, claims, fenced leases,
 * fenced locks with FIFO waits, and exactly-once client sessions.
 *
 * @example
 * ```ts
 * import { CoordStateMachine, encodeCommand } from '@parley/coord';
 *
 * const sm = new CoordStateMachine({ versionKey: 'cluster-secret' });
 * let index = 0;
 * const run = (op, nowMs = 1_700_000_000_000) => sm.apply({ nowMs, op }, { index: ++index, term: 1 }).result;
 *
 * const set = run({ type: 'set', namespace: 'jobs', key: 'cfg', value: { pct: 25 } });
 * // { ok: true, value: { type: 'entry', operation: 'created', entry: { version: 'q3…', ... } } }
 * run({ type: 'set', namespace: 'jobs', key: 'cfg', value: { pct: 50 }, ifVersion: 'stale' });
 * // { ok: false, error: { code: 'version_mismatch', ... } } — nothing written
 *
 * const lock = run({ type: 'lock_acquire', namespace: 'deploy', key: 'rollout', owner: 'w1', ttlSeconds: 30 });
 * const bytes = sm.snapshot(); // byte-identical on every replica at the same index
 * encodeCommand({ nowMs: 0, op: { type: 'expire' } }); // what a leader proposes to drop expired state
 * ```
 */

export type {
  StrongBackend,
  StrongCallOptions,
  StrongChange,
  StrongNamespaceUsage,
  StrongReadOptions,
  StrongSessionRef,
  StrongWatchFilter,
} from './backend.js';
export {
  acquireLease,
  attachLease,
  type CoordCall,
  cooperativeWrite,
  coordDocStore,
  type Doc,
  type DocSchema,
  type DocStore,
  type DocUpdateOptions,
  doc,
  errorFromPayload,
  isConflict,
  LeaseHandle,
  type LeaseOptions,
  SessionSequencer,
  unwrap,
} from './client.js';
export {
  CODEC_VERSION,
  checkOperationShape,
  decodeCommand,
  decodeResult,
  encodeCommand,
  encodeResult,
  MAX_COMMAND_BYTES,
  MAX_RESULT_BYTES,
  validateOperation,
} from './codec.js';
export type { CursorPosition } from './cursor.js';
export { evalFilter, type FilterNode, MAX_FILTER_COMPARISONS, MAX_FILTER_LENGTH, parseFilter } from './filter.js';
export { compileGlob, globMatch } from './glob.js';
export { canonicalJson, type JsonValue, MAX_JSON_DEPTH } from './json.js';
export {
  type ListBounds,
  type ListedFields,
  type ListPlan,
  type ListRequest,
  listPage,
  planList,
  takePage,
} from './list-page.js';
export {
  LINEARIZABLE,
  MAX_LAG_ENTRIES,
  MAX_STALENESS_MS,
  READ_CONSISTENCY_LEVELS,
  type ReadConsistency,
  type ReadConsistencyLevel,
  type ReadConsistencyOptions,
  readConsistency,
} from './read-consistency.js';
export { CoordStateMachine, MAX_TIME_MS } from './state-machine.js';
export * from './types.js';
export { versionToken } from './version.js';
