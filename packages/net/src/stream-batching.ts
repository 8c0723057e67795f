import { microtask } from '@parley/interface';
import type { RpcStream } from './rpc-stream.js';

/** Frames queued in one turn are sent as one write once they reach this many bytes or the turn ends. */
const MAX_BATCH_BYTES = 64 * 1024;

/**
 * Coalesces the frames written to a stream during one turn of the event loop
 * into a single `stream.send`: one yamux frame (or lean record), one noise
 * record and one socket write instead of one per request. The only delay is a microtask.
 * A frame written with `linger` (nobody waits on it) holds the batch until the
 * turn's microtasks have all run (the next tick), so that the frames its
 * caller writes next, a few awaits later, leave in the same write.
 */
export class FrameBatcher {
  private queue: Uint8Array[] = [];
  private queuedBytes = 0;
  private scheduled = false;
  private lingering = false;

  constructor(
    private readonly stream: RpcStream,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Bytes accepted but not yet handed to the network. */
  get pendingBytes(): number {
    return this.queuedBytes + this.stream.bufferedBytes;
  }

  write(frame: Uint8Array, linger = false): void {
    this.queue.push(frame);
    this.queuedBytes += frame.length;
    if (this.queuedBytes >= MAX_BATCH_BYTES) {
      this.lingering = false;
      this.flush();
      return;
    }
    if (linger && !this.lingering) {
      this.lingering = true;
      process.nextTick(this.endLinger);
    }
    if (!this.scheduled && !this.lingering) {
      this.scheduled = true;
      microtask(this.flush);
    }
  }

  private readonly endLinger = (): void => {
    if (!this.lingering) return;
    this.lingering = false;
    this.flush();
  };

  readonly flush = (): void => {
    this.scheduled = false;
    if (this.lingering) return; // the lingering frame's tick sends the batch
    const queue = this.queue;
    if (queue.length === 0) return;
    const total = this.queuedBytes;
    this.queue = [];
    this.queuedBytes = 0;
    let data: Uint8Array;
    if (queue.length === 1) {
      data = queue[0] as Uint8Array;
    } else {
      data = new Uint8Array(total);
      let at = 0;
      for (const frame of queue) {
        data.set(frame, at);
        at += frame.length;
      }
    }
    if (!this.stream.writable) return;
    try {
      this.stream.send(data);
    } catch (err) {
      this.onError(err);
    }
  };
}
