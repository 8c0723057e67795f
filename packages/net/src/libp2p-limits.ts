/** The libp2p transport's bounds beyond the Transport contract's, with their defaults. */
import { DEFAULT_TRANSPORT_LIMITS, type TransportLimits } from '@parley/interface';

export interface Libp2pLimits extends TransportLimits {
  /** Request streams one peer may hold open towards this node (one per application protocol in use). */
  maxStreamsPerPeer: number;
  /** Unsent bytes queued on one stream before it is reset (the peer is not reading). */
  maxWriteBufferBytes: number;
  /** A new stream must name its protocol within this time. */
  helloTimeoutMs: number;
  /** How often unconnected bootstrap peers are dialled again. */
  redialIntervalMs: number;
  /** Bound on one dial attempt. */
  dialTimeoutMs: number;
  /**
   * Liveness pings on every connection; a failed ping closes it. Each ping is a new stream
   * and a peer-store write on both ends, so an idle cluster of n nodes pays n−1 of them per
   * interval per node; a closed socket is noticed at once without them, a frozen peer by its
   * request timeouts (and Raft's heartbeats) long before the next ping. What is left for
   * pings is a peer whose host vanished without closing its sockets; two minutes, as
   * NATS's default ping interval. In a 10-node idle cluster pings every 30 s cost each
   * process 3.5–5 ms of CPU per second (docs/benchmarks.md).
   */
  pingIntervalMs: number;
  maxConnections: number;
}

export const DEFAULT_LIBP2P_LIMITS: Libp2pLimits = {
  ...DEFAULT_TRANSPORT_LIMITS,
  maxStreamsPerPeer: 64,
  maxWriteBufferBytes: 16 * 1024 * 1024,
  helloTimeoutMs: 5_000,
  redialIntervalMs: 1_000,
  dialTimeoutMs: 5_000,
  pingIntervalMs: 120_000,
  maxConnections: 256,
};
