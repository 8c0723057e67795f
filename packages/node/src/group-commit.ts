/**
 * Group commit: many writers, one fsync at a time. A writer marks its source
 * dirty and awaits `commit(source)`; the next batch collects the pending
 * operations of every dirty source into one atomic `KVStorage.batch`, so all
 * writes that arrive while one fsync runs share the next one. Sustained local
 * writes are bounded by the disk's bandwidth, not by its fsync rate.
 */
import type { Clock, Emitter, KVStorage, StorageOp } from '@parley/interface';
import { ClosedError } from '@parley/interface';
import type { NodeEvents, NodeLogger } from './context.js';

export interface CommitSource {
  /** Hands over the operations to write now (called once per batch for each dirty source). */
  collect(): StorageOp[];
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Promise turns a batch waits for more writers before it is collected. */
export const GATHER_TURNS = 32;

export class GroupCommit {
  private dirty = new Set<CommitSource>();
  private waiting: Waiter[] = [];
  private running: Promise<void> | undefined;
  private closed = false;
  /** Batches written, for tests and status. */
  batches = 0;

  constructor(
    private readonly kv: KVStorage,
    private readonly clock: Clock,
    private readonly events: Emitter<NodeEvents>,
    private readonly logger: NodeLogger,
  ) {}

  /** Resolves once everything `source` has pending now is durable. */
  commit(source: CommitSource): Promise<void> {
    if (this.closed) return Promise.reject(new ClosedError('node storage'));
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
        this.logger.error({ err: String(err), ops: ops.length }, 'eventual: storage batch failed');
      }
      for (const w of waiters) {
        if (failure === undefined) w.resolve();
        else w.reject(failure);
      }
    }
    this.running = undefined;
  }
}
