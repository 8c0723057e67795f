import type { PeerId } from '@parley/interface';

/** A ReadIndex request awaiting its heartbeat round (safe reads). */
export interface PendingRead {
  index: number;
  from: PeerId;
  context: Uint8Array;
  acks: Set<PeerId>;
  /** Leader tick at which the read's first heartbeat round went out. */
  sentTick: number;
}

function ctxKey(ctx: Uint8Array): string {
  let s = '';
  for (let i = 0; i < ctx.length; i++) s += String.fromCharCode(ctx[i] as number);
  return s;
}

/** The leader's queue of ReadIndex requests, keyed by context, oldest first. */
export class ReadOnlyQueue {
  private readonly pending = new Map<string, PendingRead>();
  private readonly queue: string[] = [];

  get length(): number {
    return this.queue.length;
  }

  clear(): void {
    this.pending.clear();
    this.queue.length = 0;
  }

  /** Queues `read`; false when a read with its context is queued already or `max` are queued. */
  add(read: PendingRead, max: number): boolean {
    const key = ctxKey(read.context);
    if (this.pending.has(key)) return false;
    if (this.queue.length >= max) return false;
    this.pending.set(key, read);
    this.queue.push(key);
    return true;
  }

  /** The context of the newest queued read, which the next heartbeat round carries. */
  lastContext(): Uint8Array | undefined {
    return this.queue.length > 0 ? this.pending.get(this.queue[this.queue.length - 1] as string)?.context : undefined;
  }

  get(context: Uint8Array): PendingRead | undefined {
    return this.pending.get(ctxKey(context));
  }

  /** Removes and returns, oldest first, every read queued up to and including the one with `context`. */
  confirmThrough(context: Uint8Array): PendingRead[] {
    const key = ctxKey(context);
    const out: PendingRead[] = [];
    while (this.queue.length > 0) {
      const k = this.queue.shift() as string;
      const r = this.pending.get(k);
      this.pending.delete(k);
      if (r) out.push(r);
      if (k === key) break;
    }
    return out;
  }
}
