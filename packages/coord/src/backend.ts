/**
 * The seam of a node's strong side: every strong call (`node.strong(ns)`,
 * `node.locks(ns)`, leases, docs, watches) reduces to a write, a
 * linearizable read or a watch of coord `Operation`s. The built-in Raft group
 * implements it, and so does `@parley/etcd` over an etcd v3 cluster; both
 * answer with the same `OpResult`s and reject with the same typed errors.
 */
import type { ParleyError } from '@parley/interface';
import type { ReadConsistency } from './read-consistency.js';
import type { Entry, Operation, OpResult } from './types.js';

/** One change of a strong entry, numbered by the backend's revision. */
export interface StrongChange {
  namespace: string;
  key: string;
  type: 'set' | 'delete' | 'expire';
  entry?: Entry;
  /**
   * Never decreasing per backend (the Raft log index of the change, or the
   * etcd revision): the changes of one command or transaction (a
   * deleteNamespace) share it. Resume a watch after it with `fromRevision`.
   */
  revision: number;
}

/** Time bounds of one strong call. */
export interface StrongCallOptions {
  /** Bound of the whole call, in ms; default: the backend's call timeout. */
  timeoutMs?: number;
  /** Extra time the backend may hold the call (a blocking lock wait), in ms. */
  waitMs?: number;
}

/** A read's time bound and how fresh it must be (default linearizable; ./read-consistency.ts). */
export interface StrongReadOptions extends StrongCallOptions {
  consistency?: ReadConsistency;
}

/** Which changes a strong watch follows. */
export interface StrongWatchFilter {
  namespace: string;
  /** Only keys that start with this. */
  prefix?: string;
}

/** Keys and value bytes a backend holds for one strong namespace. */
export interface StrongNamespaceUsage {
  name: string;
  keys: number;
  bytes: number;
}

/** Where a node's strong calls go: the built-in Raft group, or etcd (see the file comment). */
export interface StrongBackend {
  /** Which implementation answers: `'raft'` (built in) or `'etcd'`. */
  readonly kind: string;
  /**
   * Applies a mutating operation exactly once (retries inside the call
   * never apply it twice) and resolves with its result, or rejects with its
   * typed ParleyError (`unavailable`/`timeout` when the backend cannot be
   * reached within the call's bound; never hangs).
   */
  write(op: Operation, options?: StrongCallOptions): Promise<OpResult>;
  /**
   * A read (`get`, `list`, `lease_attach`, `lock_inspect`, `lock_list`):
   * linearizable unless `options.consistency` asks for a serializable or a
   * bounded-staleness read (a backend that cannot give one fails with
   * `invalid_argument`, never with a weaker read).
   */
  read(op: Operation, options?: StrongReadOptions): Promise<OpResult>;
  /**
   * Calls back once per change matching `filter`, in revision order, after
   * `fromRevision` (replaying kept changes; throws `compacted` when they are
   * no longer kept) or from now on when it is undefined. Returns the stop
   * function. A watch never skips a change: when the changes after the last
   * one delivered can no longer be had, it stops and calls `onError` once
   * with `compacted`.
   */
  watch(
    filter: StrongWatchFilter,
    fromRevision: number | undefined,
    callback: (change: StrongChange) => void,
    onError?: (err: ParleyError) => void,
  ): () => void;
  /** Keys and bytes per namespace (bounded scans; for `node.status()`). */
  usage(): Promise<StrongNamespaceUsage[]>;
  /** Stops the backend; pending calls fail with a retryable error. Idempotent. */
  close(): Promise<void>;
}
