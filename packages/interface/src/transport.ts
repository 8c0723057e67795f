import type { TypedEvents, Unsubscribe } from './events.js';

/** A peer's identity as a string (a libp2p peer id in production). */
export type PeerId = string;

export interface RequestOptions {
  /** Reject with `timeout` after this long. Default: the transport's `defaultTimeoutMs`. */
  timeoutMs?: number;
  /**
   * A hint for a request nobody waits on: the transport may hold it until
   * the current turn of the event loop ends, so that requests made right
   * after it to the same peer leave in the same write. Ordering and answers
   * are unchanged; a transport may ignore it.
   */
  coalesce?: boolean;
}

/**
 * Answers one request. Throwing a ParleyError makes the caller's `request()`
 * reject with a ParleyError of the same code and message; any other throw
 * reaches the caller as `unavailable`.
 */
export type RequestHandler = (from: PeerId, request: Uint8Array) => Promise<Uint8Array> | Uint8Array;

/** Receives one gossip message. It must not throw; errors are logged and dropped. */
export type GossipHandler = (from: PeerId, message: Uint8Array) => void;

export interface TransportEvents extends Record<string, unknown> {
  'peer:connect': PeerId;
  'peer:disconnect': PeerId;
}

export interface TransportLimits {
  /** Largest request, response or gossip payload accepted or sent. */
  maxMessageBytes: number;
  /** Requests outstanding towards one peer before `request()` rejects with `unavailable`. */
  maxInFlightPerPeer: number;
  defaultTimeoutMs: number;
}

export const DEFAULT_TRANSPORT_LIMITS: TransportLimits = {
  maxMessageBytes: 4 * 1024 * 1024,
  maxInFlightPerPeer: 256,
  defaultTimeoutMs: 5_000,
};

/**
 * The network seam. Implementations: libp2p (TCP), in-memory, simulated.
 * Every implementation passes the same compliance suite.
 *
 * Errors: `request()` rejects with `timeout`, `unavailable` (peer unknown,
 * unreachable, disconnected mid-request, or in-flight window full),
 * `value_too_large` (payload over `maxMessageBytes`), `closed` (stopped), or
 * the handler's own ParleyError code.
 *
 * `send()` is the one-way form: the payload reaches the peer's handler for the
 * protocol, whose answer is discarded and never crosses the wire. Messages
 * sent to one peer on one protocol, and requests on the same protocol, arrive
 * in the order they were sent, or not at all.
 */
export interface Transport extends TypedEvents<TransportEvents> {
  readonly peerId: PeerId;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Registers the handler for a request/response protocol, replacing any earlier one. */
  handle(protocol: string, handler: RequestHandler): void;
  unhandle(protocol: string): void;
  request(peer: PeerId, protocol: string, payload: Uint8Array, options?: RequestOptions): Promise<Uint8Array>;
  /**
   * Fire-and-forget: hands `payload` to the peer's handler for `protocol` and
   * discards its answer (nothing is sent back). Resolves once the message is
   * on its way, which says nothing about delivery; rejects with `closed`
   * (stopped), `value_too_large` (over `maxMessageBytes`, nothing sent) or
   * `unavailable` (the peer is unknown or unreachable now). A message lost in
   * flight, or refused at the peer (no handler, a failing handler), is dropped
   * without a word to the sender.
   */
  send(peer: PeerId, protocol: string, payload: Uint8Array): Promise<void>;
  subscribe(topic: string, handler: GossipHandler): Unsubscribe;
  /** Best effort. Publishing with no subscribed peer is not an error (anti-entropy repairs it). */
  publish(topic: string, payload: Uint8Array): Promise<void>;
  /** Peers with a live connection now. */
  peers(): PeerId[];
}
