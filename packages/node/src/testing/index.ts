/**
 * `@parley/node/testing` — what tests of Parley and of code built on it use:
 * in-memory clusters and manual time (`memoryCluster`, `ManualTime`), node
 * processes on loopback driven over IPC (`EventualPeer`, `PeerProcess`), and
 * `internals(node)`, a node's context and modules for tests that look inside,
 * and the strong group's member over its seams (`StrongReplica`, the one the
 * node runs), which the simulator's `coord-*` hosts boot on their own.
 * Not part of the node's API: nothing here is needed to run Parley.
 */
export { internals, type ParleyNodeInternals } from '../node.js';
export {
  createStrongModule,
  type ReplicaHooks,
  type StrongModule as RaftStrongModule,
  type StrongModuleExtras,
} from '../strong/index.js';
export {
  MAX_PENDING_READS,
  type MemberOptions,
  type MemberSeams,
  type Pending,
  StrongReplica,
} from '../strong/replica.js';
export type { EventualPeerConfig, EventualPeerTask } from './eventual-peer.js';
export { EventualPeer, eventualPeerPath } from './eventual-peers.js';
export type { PeerProcessConfig, PeerTask } from './strong-peer.js';
export { PeerProcess, peerProgramPath } from './strong-peers.js';
export { eventually, ManualTime, type MemoryCluster, memoryCluster, settle, silentNodeLogger } from './testkit.js';
