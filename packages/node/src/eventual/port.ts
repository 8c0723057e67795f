/**
 * What replication and rich values see of their namespace: two narrow ports,
 * so neither reaches into the namespace (nor imports it). The namespace builds
 * both from its local replica.
 */
import type { Delta, Digest } from '@parley/crdt';
import type { PeerId, Unsubscribe } from '@parley/interface';
import type { NodeContext } from '../context.js';
import type { CommitSource } from '../group-commit.js';
import type { NamespaceCounters } from './local-replica.js';
import type { ResolvedEventualOptions } from './options.js';
import type { NamespaceMeta } from './persist.js';

/** The namespace as the Replicator (gossip, anti-entropy, majority) uses it. */
export interface ReplicationPort {
  readonly name: string;
  readonly ctx: NodeContext;
  readonly options: ResolvedEventualOptions;
  readonly counters: NamespaceCounters;
  /** The namespace is closing or closed: input is ignored. */
  readonly closed: boolean;
  now(): number;
  /** The known replicas persisted in the namespace's meta. */
  storedReplicas(): NamespaceMeta['replicas'];
  /** Persists a new list of known replicas. */
  storeReplicas(replicas: NamespaceMeta['replicas']): void;
  /** What this replica has seen, and the states a peer's digest lacks. */
  digest(): Digest;
  deltaFor(digest: Digest): Delta;
  /** Applies the incarnation rule (see LocalReplica). */
  checkIncarnation(): void;
  /** Merges a peer's delta; returns the changed key count. */
  mergeRemote(delta: Delta, bytes: Uint8Array | undefined, origin: PeerId): number;
  /** Records a completed anti-entropy round. */
  noteContact(now: number): void;
  /** Resolves once everything applied so far is durable. */
  durable(): Promise<void>;
  /** Answers a rich-value request from a peer (it rides on the namespace's request protocol). */
  richRequest(from: PeerId, body: Uint8Array): Promise<Uint8Array>;
}

/** The namespace as rich values (yjs, automerge) use it. */
export interface RichPort {
  readonly name: string;
  readonly ctx: NodeContext;
  readonly options: ResolvedEventualOptions;
  readonly counters: NamespaceCounters;
  /** The namespace's request protocol (rich requests carry their own tag). */
  readonly protocol: string;
  /** Resolves once everything `source` has pending is durable. */
  commitTo(source: CommitSource): Promise<void>;
  /** Retries a read that failed with a transient storage error. */
  retryRead<T>(read: () => Promise<T>): Promise<T>;
  /** Counts, logs and emits one refused piece of input from `peer`. */
  reject(peer: PeerId, err: unknown): void;
}

/** The namespace as a door for client replicas (browser tabs) uses it: see client-replication.ts. */
export interface ClientReplication {
  readonly namespace: string;
  /** Resolves once the namespace is open (restored from disk). */
  readonly ready: Promise<void>;
  /** The namespace's bounds a client replica must share. */
  readonly maxTtlSeconds: number;
  readonly maxValueBytes: number;
  /** The node's clock (ms since the epoch): a client behind it moves its own forward. */
  now(): number;
  /** The dots this node has seen. */
  digest(): Digest;
  /** The states a client with `digest` lacks (InvalidArgumentError for another namespace's digest). */
  deltaFor(digest: Digest): Delta;
  /**
   * Decodes and checks a client's encoded delta as a peer's (DecodeError,
   * InvalidArgumentError, ValueTooLargeError: counted and refused whole), merges
   * it, and gossips it on to the cluster; resolves with the delta once it is
   * durable on this node.
   */
  push(bytes: Uint8Array, client: string): Promise<Delta>;
  /** Calls `callback` after every change of the namespace (local write, merged delta, expiry). */
  onChange(callback: () => void): Unsubscribe;
}
