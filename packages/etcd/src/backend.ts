/**
 * `EtcdBackend`: Parley's strong side (coord's StrongBackend seam) on an etcd
 * v3 cluster through the official etcd3 client. Every operation is first
 * validated with coord's `validateOperation` and the same CoordLimits as the
 * built-in Raft backend, so limits, errors and codes are the same; then it is
 * routed to its module:
 *
 * | operations                                             | module                    |
 * | ------------------------------------------------------ | ------------------------- |
 * | set, get, delete, claim                                 | entries.ts                |
 * | list, delete_namespace (and usage())                    | list.ts                   |
 * | lease_acquire, lease_renew, lease_write, lease_release, | leases.ts (lease side)    |
 * | lease_cooperative_write, lease_attach                   |                           |
 * | lock_acquire, lock_renew, lock_release, lock_inspect,   | locks.ts (lock side)      |
 * | lock_list; the fence check of fenced writes             | fence.ts                  |
 *
 * and watches to watch.ts. Key layout: keys.ts; records: record.ts; the
 * bounded, retried, exactly-once transaction helper: txn.ts.
 *
 * @example
 * ```ts
 * const backend = new EtcdBackend({ endpoints: ['http://127.0.0.1:2379'] });
 * const r = await backend.write({ type: 'set', namespace: 'jobs', key: 'cfg', value: { pct: 25 } });
 * await backend.close();
 * ```
 */
import {
  type CoordLimits,
  checkOperationShape,
  DEFAULT_LIMITS,
  type Operation,
  type OpResult,
  READ_OPERATIONS,
  type StrongBackend,
  type StrongCallOptions,
  type StrongChange,
  type StrongNamespaceUsage,
  type StrongReadOptions,
  type StrongSessionRef,
  type StrongWatchFilter,
} from '@parley/coord';
import {
  type Clock,
  InvalidArgumentError,
  isParleyError,
  type ParleyError,
  type Random,
  type Scheduler,
  SeededRandom,
  SessionBehindError,
  systemClock,
  systemScheduler,
  UnavailableError,
} from '@parley/interface';
import { Etcd3 } from 'etcd3';
import { CleanupLeases } from './cleanup.js';
import type { EtcdContext, OpCall } from './context.js';
import { claimEntry, deleteEntry, getEntry, setEntry } from './entries.js';
import { makeFenceCheck } from './fence.js';
import { DEFAULT_PREFIX, KeyLayout } from './keys.js';
import { leaseOperation } from './leases.js';
import { deleteNamespace, listEntries, namespaceUsage } from './list.js';
import { lockOperation } from './locks.js';
import { RECORD_OVERHEAD_BYTES } from './record.js';
import { EtcdCalls } from './txn.js';
import { EtcdWatches } from './watch.js';

/** Options of `new EtcdBackend(…)`: where etcd is, the key prefix, coord's limits, call bounds and seams. */
export interface EtcdBackendOptions {
  /** Client URLs of the etcd members, e.g. `['http://127.0.0.1:2379']`. */
  endpoints: string[];
  /** Key prefix of everything Parley stores (default `/parley`): several Parley clusters may share one etcd. */
  prefix?: string;
  /** coord's limits (the same defaults as the built-in backend). */
  limits?: Partial<CoordLimits>;
  /** Bound of a call when it gives none, in ms (default 10,000, as the built-in backend). */
  callTimeoutMs?: number;
  /** etcd3 dial timeout, in ms (default 2,000). */
  dialTimeoutMs?: number;
  clock?: Clock;
  scheduler?: Scheduler;
  /** Source of request ids (the node passes its seeded Random). */
  random?: Random;
  /** Warnings (a watch resumed after a compaction, …). */
  logger?: { warn(obj: object, msg: string): void };
}

/** Bound of a strong call that gives none, in ms (as the built-in backend's `callTimeoutMs`). */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000;
/** Largest gRPC message the client accepts: a list page of values up to the value limit. */
const MAX_RECEIVE_BYTES = 64 * 1_048_576;
/** How soon a serializable read answered below its session's revision is asked again. */
export const SESSION_RETRY_MS = 20;

/**
 * coord's StrongBackend over an etcd v3 cluster (see the file comment): `write`,
 * `read`, `watch`, `usage` and `close`, with the built-in backend's results and
 * typed errors. Connects lazily; every call is bounded by its `timeoutMs`.
 */
export class EtcdBackend implements StrongBackend {
  readonly kind = 'etcd';
  readonly client: Etcd3;
  readonly keys: KeyLayout;
  readonly calls: EtcdCalls;
  readonly cleanup: CleanupLeases;
  readonly limits: Readonly<CoordLimits>;
  readonly context: EtcdContext;
  private readonly clock: Clock;
  private readonly callTimeoutMs: number;
  private readonly watches: EtcdWatches;
  private closed = false;

  constructor(options: EtcdBackendOptions) {
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw new InvalidArgumentError('etcd endpoints: give at least one client URL');
    }
    for (const e of options.endpoints) {
      if (typeof e !== 'string' || !/^https?:\/\/[^\s/]+$/.test(e.replace(/\/$/, ''))) {
        throw new InvalidArgumentError(`etcd endpoint '${String(e)}' is not an http(s)://host:port URL`);
      }
    }
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    if (!Number.isFinite(this.callTimeoutMs) || this.callTimeoutMs <= 0) {
      throw new InvalidArgumentError('callTimeoutMs must be positive');
    }
    try {
      this.keys = new KeyLayout(options.prefix ?? DEFAULT_PREFIX);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
    this.limits = Object.freeze({ ...DEFAULT_LIMITS, ...(options.limits ?? {}) });
    this.clock = options.clock ?? systemClock;
    this.client = new Etcd3({
      hosts: options.endpoints,
      dialTimeout: options.dialTimeoutMs ?? 2_000,
      grpcOptions: { 'grpc.max_receive_message_length': MAX_RECEIVE_BYTES },
    });
    this.calls = new EtcdCalls(
      this.client,
      this.keys,
      this.clock,
      options.scheduler ?? systemScheduler,
      options.random ?? new SeededRandom(Date.now()),
    );
    this.cleanup = new CleanupLeases(this.calls);
    this.context = {
      calls: this.calls,
      keys: this.keys,
      cleanup: this.cleanup,
      limits: this.limits,
      clock: this.clock,
      maxRecordBytes: this.limits.maxValueBytes + RECORD_OVERHEAD_BYTES,
      checkFence: makeFenceCheck(this.keys, this.limits, this.clock),
    };
    this.watches = new EtcdWatches(this.context, options.logger ?? { warn: () => {} });
  }

  private call(o: StrongCallOptions = {}): OpCall {
    const timeoutMs = o.timeoutMs ?? this.callTimeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new InvalidArgumentError('timeoutMs must be positive');
    const waitMs = o.waitMs ?? 0;
    if (!Number.isFinite(waitMs) || waitMs < 0) throw new InvalidArgumentError('waitMs must be non-negative');
    return { deadlineMs: this.clock.nowMs() + timeoutMs + waitMs, waitMs };
  }

  async write(op: Operation, options?: StrongCallOptions): Promise<OpResult> {
    checkOperationShape(op);
    if (READ_OPERATIONS.has(op.type) || op.type === 'register_session' || op.type === 'expire') {
      throw new InvalidArgumentError(`'${op.type}' is not a write on etcd`);
    }
    return this.session(op, this.call(options), options?.session);
  }

  /**
   * Linearizable by default (etcd's quorum reads); `serializable` maps to
   * etcd's serializable ranges, answered by the etcd member this node's client
   * reaches. Bounded staleness is not offered on etcd: `invalid_argument`
   * (details `unsupported: 'bounded'`), never a weaker read.
   */
  async read(op: Operation, options?: StrongReadOptions): Promise<OpResult> {
    checkOperationShape(op);
    if (!READ_OPERATIONS.has(op.type) || op.type === 'noop') {
      throw new InvalidArgumentError(`'${op.type}' is not a read-only operation`);
    }
    const level = options?.consistency?.level ?? 'linearizable';
    if (level === 'bounded') {
      throw new InvalidArgumentError(
        "bounded-staleness reads are not offered on the etcd backend: read with consistency 'serializable' or 'linearizable'",
        { backend: 'etcd', unsupported: 'bounded' },
      );
    }
    const call = this.call(options);
    return this.session(op, level === 'serializable' ? { ...call, serializable: true } : call, options?.session);
  }

  /**
   * `op` within a caller's session. Its revision is etcd's: the highest
   * header revision of the call's answers is what a session observes, on
   * success (or `key_not_found`, which saw the state it was answered from). A
   * linearizable read or a write is answered at or after every revision ever
   * acknowledged, so at or after the session's. A serializable one is answered
   * by whichever member the client reaches, from its own state: below the
   * session's revision, it is asked again (another member may answer) every
   * SESSION_RETRY_MS until the call's deadline, then fails with `session_behind`.
   */
  private async session(op: Operation, call: OpCall, session: StrongSessionRef | undefined): Promise<OpResult> {
    if (session === undefined) return this.dispatch(op, call);
    const need = session.strong;
    /** The revision a serializable answer came below the token at, once one did. */
    let behindAt: number | undefined;
    const behind = (applied: number) =>
      new SessionBehindError(`the etcd member answered at revision ${applied}, short of the session's ${need}`, {
        need,
        applied,
        backend: 'etcd',
      });
    for (;;) {
      const seen = { low: Number.POSITIVE_INFINITY, high: 0 };
      let value: OpResult | undefined;
      let failure: unknown;
      try {
        value = await this.dispatch(op, { ...call, seen });
      } catch (err) {
        failure = err;
      }
      const answered = value !== undefined || isParleyError(failure, 'key_not_found');
      // A retry cut short by the deadline: what the call learned is that the members it reached were behind.
      if (!answered && behindAt !== undefined && isParleyError(failure) && failure.retryable) throw behind(behindAt);
      if (answered && call.serializable === true && seen.low < need) {
        behindAt = seen.low;
        if (call.deadlineMs - this.clock.nowMs() <= SESSION_RETRY_MS) throw behind(seen.low);
        await new Promise<void>((resolve) => this.calls.scheduler.after(SESSION_RETRY_MS, resolve));
        continue;
      }
      if (answered && seen.high > 0) session.observeStrong(seen.high);
      if (value === undefined) throw failure;
      return value;
    }
  }

  private dispatch(op: Operation, call: OpCall): Promise<OpResult> {
    if (this.closed) return Promise.reject(new UnavailableError('the etcd backend is closed', { backend: 'etcd' }));
    const ctx = this.context;
    switch (op.type) {
      case 'lease_acquire':
      case 'lease_renew':
      case 'lease_write':
      case 'lease_release':
      case 'lease_cooperative_write':
      case 'lease_attach':
        return leaseOperation(ctx, op, call);
      case 'lock_acquire':
      case 'lock_renew':
      case 'lock_release':
      case 'lock_inspect':
      case 'lock_list':
        return lockOperation(ctx, op, call);
      case 'set':
        return setEntry(ctx, op, call);
      case 'get':
        return getEntry(ctx, op, call);
      case 'delete':
        return deleteEntry(ctx, op, call);
      case 'claim':
        return claimEntry(ctx, op, call);
      case 'list':
        return listEntries(ctx, op, call);
      case 'delete_namespace':
        return deleteNamespace(ctx, op, call);
      default:
        return Promise.reject(new InvalidArgumentError(`'${op.type}' is not an operation of the etcd backend`));
    }
  }

  watch(
    filter: StrongWatchFilter,
    fromRevision: number | undefined,
    callback: (change: StrongChange) => void,
    onError?: (err: ParleyError) => void,
  ): () => void {
    if (this.closed) throw new UnavailableError('the etcd backend is closed', { backend: 'etcd' });
    return this.watches.watch(filter, fromRevision, callback, onError);
  }

  usage(): Promise<StrongNamespaceUsage[]> {
    if (this.closed) return Promise.reject(new UnavailableError('the etcd backend is closed', { backend: 'etcd' }));
    return namespaceUsage(this.context, this.call());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watches.close();
    this.calls.close();
    this.client.close();
  }
}
