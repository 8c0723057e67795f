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
   * TCP keep-alive of every libp2p connection: once a connection has carried nothing for this
   * long, the kernel probes it every second, 10 times (Node's settings), and a host that
   * vanished without closing its sockets (power loss, a cable) is found within `keepAliveMs` +
   * 10 s, at no cost to the process. A closed socket is noticed at once without it, a frozen
   * peer by its request timeouts (and Raft's heartbeats). Default 30,000.
   */
  keepAliveMs: number;
  /**
   * Application-level pings on every connection (libp2p's connection monitor); a failed ping
   * closes it. They back the keep-alive up where it cannot see: the kernel probes only a quiet
   * connection, so a link stuck behind unacknowledged data (the peer's host gone mid-send)
   * would wait out TCP's retransmissions (up to about 15 minutes) without them, and a peer
   * whose process is frozen while its host still answers. Each ping is a stream of its own,
   * with a peer-store write on both ends: every 2 minutes they cost each process of an idle
   * 20-node cluster about 2.5 ms of CPU per second, in bursts (docs/benchmarks.md), hence
   * 10 minutes by default. 0 turns them off.
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
  keepAliveMs: 30_000,
  pingIntervalMs: 600_000,
  maxConnections: 256,
};
