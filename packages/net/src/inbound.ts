/**
 * The serving side of a request stream (a libp2p stream or a lean-channel
 * stream): the hello frame names the protocol, then each request is handed
 * to that protocol's handler and answered on the same stream, and each
 * one-way message is handed over and never answered. Bounds: the hello within
 * `helloTimeoutMs`, `maxInFlightPerPeer` handlers busy per stream, frames of at
 * most `maxBodyBytes`, unsent answers of at most `maxWriteBufferBytes`.
 */
import {
  DecodeError,
  isParleyError,
  type PeerId,
  type RequestHandler,
  TimeoutError,
  UnavailableError,
  ValueTooLargeError,
} from '@parley/interface';
import { encodeFrame, type Frame, readFrames, WIRE_VERSION } from './frame.js';
import type { Libp2pLimits } from './libp2p-limits.js';
import { describeError, type NetLogger } from './logger.js';
import type { RpcStream } from './rpc-stream.js';
import { FrameBatcher } from './stream-batching.js';

/** What serving a stream reads from and counts into: the transport's handlers, bounds and counters. */
export interface InboundHost {
  readonly handlers: ReadonlyMap<string, RequestHandler>;
  readonly limits: Libp2pLimits;
  readonly maxBodyBytes: number;
  readonly log: NetLogger;
  /** The streams being served (a stream leaves it when it closes). */
  readonly streams: Set<RpcStream>;
  readonly counts: { abortedStreams: number; droppedMessages: number };
}

/** Serves one inbound request stream from `from` until it closes. */
export function serveStream(h: InboundHost, stream: RpcStream, from: PeerId): void {
  let protocol: string | undefined;
  let active = 0;
  h.streams.add(stream);
  const writer = new FrameBatcher(stream, (err) => reject('cannot write a response; closing the stream', err));
  const helloTimer = setTimeout(() => {
    if (protocol === undefined) {
      h.counts.abortedStreams++;
      h.log.warn('peer opened a request stream and never named its protocol; closing it', { peer: from });
      stream.abort(new TimeoutError('no hello frame'));
    }
  }, h.limits.helloTimeoutMs);
  stream.onClose(() => {
    clearTimeout(helloTimer);
    h.streams.delete(stream);
  });
  const reject = (why: string, err: unknown) => {
    h.counts.abortedStreams++;
    h.log.warn(why, { peer: from, error: describeError(err) });
    stream.abort(err instanceof Error ? err : new DecodeError(String(err)));
  };
  const reply = (frame: Frame) => {
    if (!stream.writable) return;
    const encoded = encodeFrame(frame);
    if (writer.pendingBytes + encoded.length > h.limits.maxWriteBufferBytes) {
      reject('peer is not reading its responses; closing the stream', new UnavailableError('write buffer full'));
      return;
    }
    writer.write(encoded);
  };
  readFrames(
    stream,
    h.maxBodyBytes,
    (frame) => {
      if (protocol === undefined) {
        if (frame.type !== 'hello' || frame.version !== WIRE_VERSION) {
          reject('request stream did not start with a hello frame', new DecodeError(`unexpected ${frame.type}`));
          return false;
        }
        protocol = frame.protocol;
        clearTimeout(helloTimer);
        return true;
      }
      if (frame.type === 'message') {
        if (frame.payload.length > h.limits.maxMessageBytes) {
          reject('oversized one-way message from peer; closing the stream', new DecodeError('message too large'));
          return false;
        }
        const handler = h.handlers.get(protocol);
        // One-way: nothing goes back, so a message nobody can take now is dropped.
        if (!handler || active >= h.limits.maxInFlightPerPeer) {
          h.counts.droppedMessages++;
          return true;
        }
        const proto = protocol;
        const failed = (err: unknown) => {
          h.counts.droppedMessages++;
          h.log.debug('one-way message handler failed', { protocol: proto, error: describeError(err) });
        };
        let result: Promise<Uint8Array> | Uint8Array;
        try {
          result = handler(from, frame.payload);
        } catch (err) {
          failed(err);
          return true;
        }
        // A handler still busy when the next message arrives holds a slot of the window.
        if (result instanceof Promise) {
          active++;
          result.then(
            () => active--,
            (err: unknown) => {
              active--;
              failed(err);
            },
          );
        }
        return true;
      }
      if (frame.type !== 'request') {
        reject('unexpected frame on an inbound request stream', new DecodeError(`unexpected ${frame.type}`));
        return false;
      }
      const id = frame.id;
      const handler = h.handlers.get(protocol);
      if (!handler) {
        reply({
          type: 'error',
          id,
          code: 'unavailable',
          message: `no handler for protocol '${protocol}'`,
          details: { protocol },
        });
        return true;
      }
      if (active >= h.limits.maxInFlightPerPeer) {
        reply({ type: 'error', id, code: 'unavailable', message: 'too many requests in flight', details: {} });
        return true;
      }
      active++;
      const payload = frame.payload;
      const proto = protocol;
      runHandler(handler, from, payload).then(
        (response) => {
          active--;
          if (response.length > h.limits.maxMessageBytes) {
            const err = new ValueTooLargeError(response.length, h.limits.maxMessageBytes);
            reply({ type: 'error', id, code: err.code, message: err.message, details: { ...err.details } });
          } else {
            reply({ type: 'response', id, payload: response });
          }
        },
        (err: unknown) => {
          active--;
          if (isParleyError(err)) {
            reply({ type: 'error', id, code: err.code, message: err.message, details: { ...err.details } });
          } else {
            h.log.warn('request handler threw a non-Parley error', { protocol: proto, error: describeError(err) });
            reply({ type: 'error', id, code: 'unavailable', message: `handler for '${proto}' failed`, details: {} });
          }
        },
      );
      return true;
    },
    reject,
  );
}

async function runHandler(handler: RequestHandler, from: PeerId, payload: Uint8Array): Promise<Uint8Array> {
  return handler(from, payload);
}
