/**
 * The node's strong side as one contract: what `createNode` needs from
 * whatever keeps its strong namespaces, locks, leases and cluster view. Two
 * providers exist: `raftStrong(options)` (the built-in Raft group, the
 * default) and `etcdStrong({ endpoints })` from `@parley/etcd` (an existing
 * etcd v3 cluster). `createNode({ strong: provider })` starts the provider
 * once the transport runs and closes it with the node.
 */
import type { Cluster, Locks, NamespaceStatus, StrongNamespace } from './api.js';
import type { NodeContext } from './context.js';

/** A running strong side: the public faces, the cluster view, status and close. */
export interface StrongSide {
  strong(namespace: string): StrongNamespace;
  locks(namespace: string): Locks;
  readonly cluster: Cluster;
  /** Strong namespaces with entries on this member: keys and value bytes. */
  status(): Promise<NamespaceStatus[]>;
  /** The error that stopped this member's share of the strong side (a failed Raft-log save), if any. */
  fault(): unknown;
  /** Stops it and fails pending calls (retryable). Idempotent. */
  close(): Promise<void>;
}

/** What `createNode({ strong })` takes: a named factory of the strong side over the node's context. */
export interface StrongProvider {
  /** `'raft'` or `'etcd'` (as `StrongBackend.kind`). */
  readonly kind: string;
  /** Builds and starts the strong side; the context's transport is started. */
  start(ctx: NodeContext): Promise<StrongSide>;
}
