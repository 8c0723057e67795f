/**
 * Client replicas: a replica of one eventual namespace that lives outside the
 * cluster (a browser tab, `@parley/browser`) and syncs through one node over
 * a door of its HTTP server (`/sync/{namespace}`, docs/browser.md). It is a
 * replica like any other for the CRDT — its own replica id, its own dots,
 * writes accepted offline — but not a cluster member: it holds no cluster key,
 * speaks no libp2p, and is not counted among the namespace's known replicas
 * for 'majority' operations.
 *
 * What the door gets (`clientReplication(node, ns)`): the node's digest, the
 * delta a client's digest lacks, a push that checks a client's delta as a
 * peer's, merges it, persists it and gossips it on to the cluster, and a
 * signal on every change of the namespace.
 */
import type { ParleyNode } from '../api.js';
import { internals } from '../node.js';
import type { ClientReplication } from './port.js';

export type { ClientReplication } from './port.js';

/** The client-replica port of `node`'s eventual namespace `namespace` (opened if need be). */
export function clientReplication(node: ParleyNode, namespace: string): ClientReplication {
  return internals(node).eventualModule.namespace(namespace).clientReplication();
}
