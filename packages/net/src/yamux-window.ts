/**
 * yamux with the receive-window rule of yamux's specification and its
 * reference implementation: a window update is sent once half of the receive
 * window has been consumed, not after every data frame.
 *
 * `@chainsafe/libp2p-yamux` answers every data frame it receives with a
 * window-update frame. When the reply to a message is produced later (a Raft
 * append is acknowledged after its fsync, a gossiped delta after its merge),
 * that update leaves alone: one more noise record, socket write and wake-up
 * of the peer per message received. With this rule the sender always has at
 * least half of the window (256 KiB at first) to send into, so nothing waits
 * on it, and a stream of small messages sends one update per 128 KiB received.
 *
 * The rule replaces one method on each stream of the pinned yamux (8.0.0),
 * checked by `yamux-window.test.ts` on the real stream class: a yamux whose
 * streams lack the fields it reads keeps its own behaviour.
 */
import { yamux } from '@chainsafe/libp2p-yamux';
import { StreamState } from '@chainsafe/libp2p-yamux/stream';

type YamuxInit = NonNullable<Parameters<typeof yamux>[0]>;
type MuxerFactory = ReturnType<ReturnType<typeof yamux>>;

/** The fields of a yamux stream the rule reads (private in its typings). */
interface WindowedStream {
  state: StreamState;
  recvWindow: number;
  recvWindowCapacity: number;
  sendWindowUpdate(): void;
}

function isWindowed(stream: unknown): stream is WindowedStream {
  const s = stream as Partial<WindowedStream> | null;
  return (
    typeof s?.sendWindowUpdate === 'function' &&
    typeof s.recvWindow === 'number' &&
    typeof s.recvWindowCapacity === 'number' &&
    typeof s.state === 'number'
  );
}

/**
 * Makes `stream` send a window update only once half of its receive window is
 * consumed (or when the update carries flags, or the stream is paused: those
 * keep yamux's own path). Returns whether the rule was installed.
 */
export function halfWindowUpdates(stream: unknown): boolean {
  if (!isWindowed(stream)) return false;
  const eager = stream.sendWindowUpdate;
  stream.sendWindowUpdate = function (this: WindowedStream): void {
    const consumed = this.recvWindow - this.recvWindowCapacity;
    if (this.state === StreamState.Established && consumed < this.recvWindow / 2) return;
    eager.call(this);
  };
  return true;
}

/** `yamux(init)`, whose streams send window updates by the half-window rule. */
export function halfWindowYamux(init: YamuxInit): () => MuxerFactory {
  const inner = yamux(init);
  return () => {
    const factory = inner();
    const create = factory.createStreamMuxer.bind(factory);
    factory.createStreamMuxer = (...args) => {
      const muxer = create(...args);
      const internals = muxer as unknown as { _newStream?: (...a: unknown[]) => unknown };
      const newStream = internals._newStream;
      if (typeof newStream === 'function') {
        internals._newStream = function (this: unknown, ...a: unknown[]) {
          const stream = newStream.apply(this, a);
          halfWindowUpdates(stream);
          return stream;
        };
      }
      return muxer;
    };
    return factory;
  };
}
