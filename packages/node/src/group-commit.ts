/**
 * Group commit: many writers, one fsync at a time. A writer marks its source
 * dirty and awaits `commit(source)`; the next batch collects the pending
 * operations of every dirty source into one atomic `KVStorage.batch`, so all
 * writes that arrive while one fsync runs share the next one. Sustained local
 * writes are bounded by the disk's bandwidth, not by its fsync rate.
 *
 * A source learns its batch's outcome before any waiter does: `committed()`
 * once it is durable, `commitFailed(err)` when it is not. A disk fault
 * (`storage_full`, `storage_unwritable`, `storage_failed`) is sticky, as in
 * the level stores: every later commit is refused with it at once (nothing is
 * collected), the fault is logged and emitted (`storage:fault`), and `fault`
 * names it for readiness and status. A restart clears it.
 */
import type { Clock, Emitter, KVStorage, ParleyError, StorageOp } from '@parley/interface';
import { ClosedError, isParleyError } from '@parley/interface';
import type { NodeEvents, NodeLogger } from './context.js';

export interface CommitSource {
  /** Hands over the operations to write now (called once per batch for each dirty source). */
  collect(): StorageOp[];
  /** The batch holding what `collect` handed over is durable (called before its waiters resolve). */
  committed?(): void;
  /** That batch failed: none of it is on disk (called before its waiters reject). */
  commitFailed?(err: unknown): void;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Promise turns a batch waits for more writers before it is collected. */
export const GATHER_TURNS = 32;

const DISK_FAULTS = new Set(['storage_full', 'storage_unwritable', 'storage_failed']);

/** Whether `err` is a fault of the node's own disk (sticky: the store refuses every later write). */
export function isDiskFault(err: unknown): err is ParleyError {
  return isParleyError(err) && DISK_FAULTS.has(err.code);
}

export class GroupCommit {
  private dirty = new Set<CommitSource>();
  private waiting: Waiter[] = [];
  private running: Promise<void> | undefined;
  private closed = false;
  /** Batches written, for tests and status. */
  batches = 0;
  /** The disk fault that stopped writes, if any (see the module comment). */
  fault: ParleyError | undefined;

  constructor(
    private readonly kv: KVStorage,
    private readonly clock: Clock,
    private readonly events: Emitter<NodeEvents>,
    private readonly logger: NodeLogger,
  ) {}

  /** Resolves once everything `source` has pending now is durable. */
  commit(source: CommitSource): Promise<void> {
    const refused = this.closed ? new ClosedError('node storage') : this.fault;
    if (refused) {
      // No batch will hold what the source has pending: it fails now, as a failed batch would.
      this.tell(source, refused);
      return Promise.reject(refused);
    }
    this.dirty.add(source);
    const p = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.kick();
    return p;
  }

  /** Resolves once every batch started or requested so far is durable (never rejects). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Writes what is pending and refuses further commits. */
  async close(): Promise<void> {
    await this.idle();
    this.closed = true;
  }

  private kick(): void {
    if (this.running) return;
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    for (;;) {
      // Writers resumed by the previous batch need a few promise turns to issue
      // their next write: let them, so that they share the next fsync.
      for (let i = 0; i < GATHER_TURNS; i++) await null;
      if (this.dirty.size === 0) break;
      const sources = [...this.dirty];
      const waiters = this.waiting;
      this.dirty = new Set();
      this.waiting = [];
      let ops: StorageOp[] = [];
      let failure: unknown;
      try {
        if (this.fault) throw this.fault;
        for (const s of sources) {
          const more = s.collect();
          ops = ops.length === 0 ? more : ops.concat(more);
        }
        const start = this.clock.nowMs();
        if (ops.length > 0) await this.kv.batch(ops);
        this.batches++;
        this.events.emit('storage:fsync', { ms: this.clock.nowMs() - start, ops: ops.length });
      } catch (err) {
        failure = err;
        this.noteFailure(err, ops.length);
      }
      for (const s of sources) this.tell(s, failure);
      for (const w of waiters) {
        if (failure === undefined) w.resolve();
        else w.reject(failure);
      }
    }
    this.running = undefined;
  }

  private noteFailure(err: unknown, ops: number): void {
    if (isDiskFault(err)) {
      if (this.fault) return;
      this.fault = err;
      this.logger.error(
        { err: String(err), code: err.code, ops },
        'storage fault: the eventual store refuses writes until the node restarts',
      );
      this.events.emit('storage:fault', { store: 'kv', code: err.code });
      return;
    }
    this.logger.error({ err: String(err), ops }, 'eventual: storage batch failed');
  }

  /** Reports a batch's outcome to one of its sources; a source that throws does not stop the others. */
  private tell(source: CommitSource, failure: unknown): void {
    try {
      if (failure === undefined) source.committed?.();
      else source.commitFailed?.(failure);
    } catch (err) {
      this.logger.error({ err: String(err) }, 'eventual: a commit source failed to take its outcome');
    }
  }
}
