/**
 * The public types of `strong(ns).queue(name)`: a fenced work queue built on
 * the strong namespace's leases, claims and conditional writes (docs/queue.md).
 */
import type { JsonValue } from '@parley/coord';

/** Where a task is: waiting, held by a worker, finished, or given up after too many attempts. */
export type QueueTaskStatus = 'ready' | 'taken' | 'done' | 'dead';

/** Bounds of one queue, the caller's: every user of a queue should pass the same ones. */
export interface QueueOptions {
  /** Tasks from the oldest unfinished one to the newest, at most (default 1000, at most 10,000). */
  maxLength?: number;
  /** Canonical-JSON size of an item, a result or a failure reason, at most (default 64 KiB, at most 1 MiB). */
  maxItemBytes?: number;
  /** Attempts before a task is dead-lettered (default 5, 1..1000). */
  maxAttempts?: number;
}

/** Options of `enqueue`. */
export interface QueueEnqueueOptions {
  /** De-duplicates: a second enqueue with this key within `keyTtl` returns the first task. */
  key?: string;
  /** Seconds the de-duplication key is remembered (default and at most 86,400). */
  keyTtl?: number;
}

/** What `enqueue` answers. */
export interface QueueEnqueueResult {
  /** The task's id (its place in the queue's order). */
  id: string;
  /** False when `key` was already enqueued: `id` is the earlier task's. */
  created: boolean;
}

/** Options of `take`. */
export interface QueueTakeOptions {
  /** Who takes it (a worker's name or secret). */
  holder: string;
  /** Seconds the lease runs without a heartbeat (default 60, 1..2,592,000). */
  ttl?: number;
}

/** A task as stored (what `get` and `list` answer). */
export interface QueueTaskView {
  id: string;
  status: QueueTaskStatus;
  item: JsonValue;
  /** Attempts started so far (1 during the first). */
  attempts: number;
  /** The de-duplication key it was enqueued with, or null. */
  key: string | null;
  /** The current (or last) holder, or null. */
  holder: string | null;
  /** The lease's fence: the epoch of the current (or last) attempt; 0 before the first. */
  fence: number;
  /** Epoch ms (the strong side's clock) the lease runs until; for a ready task, when it may be taken. */
  deadlineAt: number;
  /** `complete`'s result (done), or null. */
  result: JsonValue;
  /** The last `fail` reason, `"lease expired"` after a lost lease, or null. */
  error: JsonValue;
}

/** One attempt at a task: its lease. Every call is fenced; once another worker took the task they fail with `lease_lost`. */
export interface QueueTask {
  readonly id: string;
  readonly item: JsonValue;
  readonly attempt: number;
  readonly holder: string;
  readonly fence: number;
  /** Epoch ms (the strong side's clock) the lease runs until, as of the last call. */
  readonly deadlineAt: number;
  /** Extends the lease by `ttl` seconds (default: the take's TTL). */
  heartbeat(ttl?: number): Promise<void>;
  /** Finishes the task with `result` (`lease_lost` if another worker took it: the task completes once). */
  complete(result?: JsonValue): Promise<void>;
  /**
   * Gives the task back with `reason`: ready again at once, or after `retryAfter` seconds;
   * dead once its attempts reached the queue's `maxAttempts`.
   */
  fail(reason: JsonValue, options?: { retryAfter?: number }): Promise<void>;
}

/** Tasks of a queue by status. */
export interface QueueStats {
  ready: number;
  taken: number;
  done: number;
  dead: number;
}

/** `strong(ns).queue(name)`: a fenced work queue (docs/queue.md). */
export interface StrongQueue {
  readonly namespace: string;
  readonly name: string;
  enqueue(item: JsonValue, options?: QueueEnqueueOptions): Promise<QueueEnqueueResult>;
  /** The oldest task that may be taken (ready, or its lease expired), leased to `holder`; null when none. */
  take(options: QueueTakeOptions): Promise<QueueTask | null>;
  /** A handle on an attempt a worker took earlier (over HTTP, MCP): its calls are fenced by `fence`. */
  task(id: string, options: { holder: string; fence: number; ttl?: number }): QueueTask;
  get(id: string): Promise<QueueTaskView | undefined>;
  /** Tasks in queue order, optionally of one status; `limit` default 100, at most 1000. */
  list(options?: {
    status?: QueueTaskStatus;
    limit?: number;
    cursor?: string;
  }): Promise<{ items: QueueTaskView[]; nextCursor: string | null }>;
  /** Counts by status (reads every task: for operators, not for a worker's loop). */
  stats(): Promise<QueueStats>;
}
