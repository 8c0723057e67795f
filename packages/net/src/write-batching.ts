/**
 * Socket-level write batching, installed as a libp2p connection protector
 * (wrapping the PSK protector when there is one).
 *
 * libp2p's yamux answers every data frame with a window-update frame, and
 * every frame becomes its own noise record and socket write: a request and its
 * response cost four syscalls and four wake-ups. Holding the connection's
 * writes until the end of the current event-loop iteration (`setImmediate`,
 * after every I/O callback of the iteration and all the promise jobs they
 * started) lets a window update leave together with the response, or the next
 * request, produced in the same iteration: one write per direction per round
 * trip.
 */
import type { AbortOptions, ConnectionProtector, MessageStream } from '@libp2p/interface';

/** Writes queued in one iteration are flushed early once they reach this size. */
const MAX_BATCH_BYTES = 64 * 1024;

type Chunk = Uint8Array | { subarray(): Uint8Array; byteLength: number };

function bytesOf(data: Chunk): Uint8Array {
  return data instanceof Uint8Array ? data : data.subarray();
}

/** A view of `stream` whose `send` coalesces the writes of one event-loop iteration into one. */
export function batchWrites<T extends MessageStream>(stream: T): T {
  let queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let scheduled = false;
  const open = () => stream.status === 'open' || stream.status === 'closing';

  const flush = (): void => {
    scheduled = false;
    if (queue.length === 0) return;
    let data: Uint8Array;
    if (queue.length === 1) {
      data = queue[0] as Uint8Array;
    } else {
      data = new Uint8Array(queuedBytes);
      let at = 0;
      for (const chunk of queue) {
        data.set(chunk, at);
        at += chunk.length;
      }
    }
    queue = [];
    queuedBytes = 0;
    if (!open()) return; // closed or aborted meanwhile: nothing to deliver
    try {
      stream.send(data);
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)));
    }
  };

  const send = (data: Chunk): boolean => {
    if (!open()) return stream.send(bytesOf(data)); // throws the stream's own error
    const bytes = bytesOf(data);
    queue.push(bytes);
    queuedBytes += bytes.length;
    if (queuedBytes >= MAX_BATCH_BYTES) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
    return !stream.writableNeedsDrain;
  };

  const close = async (options?: AbortOptions): Promise<void> => {
    flush();
    await stream.close(options);
  };

  return new Proxy(stream, {
    get(target, property) {
      if (property === 'send') return send;
      if (property === 'close') return close;
      const value: unknown = Reflect.get(target, property, target);
      // Methods run on the real stream (its private fields); own function-valued
      // properties such as `log` (which carries `.trace`, `.error`) pass as they are.
      return typeof value === 'function' && !Object.hasOwn(target, property) ? value.bind(target) : value;
    },
    set(target, property, value) {
      return Reflect.set(target, property, value, target);
    },
  });
}

/** A connection protector that batches writes above `inner` (the PSK layer), or alone. */
export function batchingProtector<C>(
  inner?: (components: C) => ConnectionProtector,
): (components: C) => ConnectionProtector {
  return (components) => {
    const protector = inner?.(components);
    return {
      async protect(connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
        const protectedStream = protector ? await protector.protect(connection, options) : connection;
        return batchWrites(protectedStream);
      },
    };
  };
}
