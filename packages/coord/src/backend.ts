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

/**
 * The strong part of a caller's session (the node's `Session`): what a call
 * must be served at or after, and where it records what it was served at.
 */
export interface StrongSessionRef {
  /** The log index (Raft index, or etcd revision) a serializable or bounded read must be answered at or after. */
  readonly strong: number;
  /** Called once a call has succeeded, with the index its write applied at or its read was answered at. */
  observeStrong(index: number): void;
}

/** Time bounds of one strong call, and the session it is part of. */
export interface StrongCallOptions {
  /** Bound of the whole call, in ms; default: the backend's call timeout. */
  timeoutMs?: number;
  /** Extra time the backend may hold the call (a blocking lock wait), in ms. */
  waitMs?: number;
  /**
   * A read is answered only from a state applied through `session.strong`
   * (a serializable read waits for it within the call's bound, else fails
   * with `session_behind`); on success, the call observes its index into it.
   */
  session?: StrongSessionRef;
  /**
   * Nobody waits on this call's answer right away (a pipelined lock
   * release): its request may wait for the end of the current turn of the
   * event loop to leave with the calls made after it. A hint; answers and
   * ordering are unchanged.
   */
  coalesce?: boolean;
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
