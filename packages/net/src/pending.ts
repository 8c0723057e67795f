import { type ParleyError, type PeerId, TimeoutError, UnavailableError } from '@parley/interface';

interface Pending {
  peer: PeerId;
  resolve(value: Uint8Array): void;
  reject(err: ParleyError): void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * The outstanding requests of one transport: each has a timeout, and each peer
 * a bounded in-flight window. Every transport implementation keeps its
 * requests here, so timeouts, window accounting and failure fan-out behave
 * the same everywhere.
 */
export class PendingRequests {
  private readonly pending = new Map<number, Pending>();
  private readonly inFlight = new Map<PeerId, number>();

  constructor(private readonly maxInFlightPerPeer: number) {}

  get size(): number {
    return this.pending.size;
  }

  has(id: number): boolean {
    return this.pending.has(id);
  }

  peerOf(id: number): PeerId | undefined {
    return this.pending.get(id)?.peer;
  }

  /** The error a new request to `peer` fails with while its window is full. */
  windowFull(peer: PeerId): UnavailableError | undefined {
    const inFlight = this.inFlight.get(peer) ?? 0;
    if (inFlight < this.maxInFlightPerPeer) return undefined;
    return new UnavailableError(`${inFlight} requests already in flight to ${peer}`, {
      peer,
      limit: this.maxInFlightPerPeer,
    });
  }

  /** Registers request `id` (the caller checked `windowFull` first); it times out after `timeoutMs`. */
  open(id: number, peer: PeerId, protocol: string, timeoutMs: number): Promise<Uint8Array> {
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(
          id,
          new TimeoutError(`request '${protocol}' to ${peer} timed out after ${timeoutMs} ms`, { peer, protocol }),
        );
      }, timeoutMs);
      this.pending.set(id, { peer, resolve, reject, timer });
      this.inFlight.set(peer, (this.inFlight.get(peer) ?? 0) + 1);
    });
  }

  /** Settles request `id` with a response; false when it had already ended. */
  resolve(id: number, payload: Uint8Array): boolean {
    const pending = this.take(id);
    pending?.resolve(payload);
    return pending !== undefined;
  }

  /** Settles request `id` with an error; false when it had already ended. */
  fail(id: number, err: ParleyError): boolean {
    const pending = this.take(id);
    pending?.reject(err);
    return pending !== undefined;
  }

  failPeer(peer: PeerId, err: ParleyError): void {
    for (const [id, pending] of this.pending) if (pending.peer === peer) this.fail(id, err);
  }

  failAll(err: ParleyError): void {
    for (const id of [...this.pending.keys()]) this.fail(id, err);
  }

  private take(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    const count = (this.inFlight.get(pending.peer) ?? 1) - 1;
    if (count <= 0) this.inFlight.delete(pending.peer);
    else this.inFlight.set(pending.peer, count);
    return pending;
  }
}
