/**
 * What the transport's request machinery needs of a stream: a libp2p stream
 * (adapted here) or a lean-channel stream (lean/link.ts) both provide it.
 */
import type { Stream } from '@libp2p/interface';

export interface RpcStream {
  /** True while frames may be sent. */
  readonly writable: boolean;
  /** Bytes handed to `send` but not yet written to the socket. */
  readonly bufferedBytes: number;
  send(data: Uint8Array): void;
  /** Closes the stream at once; pending frames are lost. */
  abort(err: Error): void;
  onData(listener: (chunk: Uint8Array) => void): void;
  /** Called once, however the stream ends. */
  onClose(listener: () => void): void;
}

/** A libp2p stream seen as an RpcStream. */
export function libp2pRpcStream(stream: Stream, maxWriteBufferBytes: number): RpcStream {
  stream.maxWriteBufferLength = maxWriteBufferBytes;
  return {
    get writable() {
      return stream.writeStatus === 'writable';
    },
    get bufferedBytes() {
      return stream.writeBufferLength;
    },
    send: (data) => {
      stream.send(data);
    },
    abort: (err) => stream.abort(err),
    onData: (listener) =>
      stream.addEventListener('message', (evt) => {
        const data = evt.data;
        listener(data instanceof Uint8Array ? data : data.subarray());
      }),
    onClose: (listener) => stream.addEventListener('close', () => listener()),
  };
}
