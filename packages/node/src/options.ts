/**
 * `createNode` options: what a user sets (data directory, addresses, cluster
 * secrets, logger) and the seams a test or the simulator injects (clock,
 * scheduler, random, transport, storage).
 */
import type { Clock, Random, Scheduler, Transport } from '@parley/interface';
import type { NodeLogger, NodeStorage } from './context.js';
import type { EventualOptions } from './eventual/options.js';
import type { StrongOptions } from './strong/options.js';
import type { StrongProvider } from './strong-side.js';

export interface NodeOptions {
  /** Where the node keeps its identity, lock file and stores. Default `./.parley`. Ignored when both `storage` and `transport` are injected. */
  dataDir?: string;
  /** Multiaddrs to listen on. Default `['/ip4/127.0.0.1/tcp/0']` (loopback only). */
  listen?: string[];
  /** Multiaddrs of peers to dial at start and keep dialling while not connected. */
  bootstrap?: string[];
  /**
   * The cluster's pre-shared key (libp2p swarm-key bytes) or the path of its file.
   * Default: `<dataDir>/cluster.psk`, created on first start (copy it to every node
   * of the cluster) — unless `allowList` or `openCluster` is given.
   */
  psk?: Uint8Array | string;
  /** Peer ids allowed to connect, in either direction. */
  allowList?: string[];
  /** Run with neither PSK nor allow-list: anyone who reaches the port may join. */
  openCluster?: boolean;
  /**
   * The lean channel for requests, Raft and strong traffic (default on, any free port on the
   * first `listen` address): `{ port }` fixes its TCP port (open it beside the libp2p port in a
   * firewall), `false` keeps every request on libp2p streams. See @parley/net's README.
   */
  lean?: boolean | { port?: number };
  /** A pino logger (or anything with debug/info/warn/error). Default: pino at `warn` on stderr. */
  logger?: NodeLogger;
  /** Eventual namespaces: limits, gossip and anti-entropy settings. */
  eventual?: EventualOptions;
  /**
   * Where strong namespaces, locks and leases live: `raftStrong(options)` (the
   * built-in Raft group of Parley nodes, the default: this node alone) or
   * `etcdStrong({ endpoints, prefix })` from `@parley/etcd` (an existing etcd v3
   * cluster; see docs/guarantees.md, "On etcd").
   */
  strong?: StrongProvider;
  /** Shorthand for `strong: raftStrong(raft)`: the built-in Raft group's voters, timing, snapshots, call bounds. */
  raft?: StrongOptions;
  /** Bound on `close()`; default 5,000 ms. */
  closeTimeoutMs?: number;
  // ---- seams (tests, the simulator) ----
  clock?: Clock;
  scheduler?: Scheduler;
  random?: Random;
  /** A transport to use instead of libp2p (its lifecycle is then the node's: started and stopped by it). */
  transport?: Transport;
  /** Stores to use instead of LevelDB under dataDir. */
  storage?: NodeStorage;
}
