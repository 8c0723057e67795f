/**
 * @parley/crdt — the CRDTs behind Parley's eventual entries: a hybrid logical
 * clock, LWW registers, PN-counters, and a delta-state map for one namespace
 * with TTL expiry, tombstones, garbage collection, O(difference) anti-entropy
 * and a deterministic binary codec. Pure: time arrives as arguments.
 *
 * @example
 * ```ts
 * import { NamespaceReplica, encodeDelta, decodeDelta } from '@parley/crdt';
 * const a = new NamespaceReplica({ namespace: 'deploy', replicaId: 'a' });
 * const b = new NamespaceReplica({ namespace: 'deploy', replicaId: 'b' });
 * const delta = a.set('rollout', { pct: 25 }, 1_000, { ttlSeconds: 600 }); // gossip this
 * b.merge(decodeDelta(encodeDelta(delta)), 1_005);
 * b.get('rollout', 1_005); // { value: { pct: 25 }, version, ttlSeconds: 600, createdAt: 1000, ... }
 * b.increment('restarts', 1, 1_010);
 * // anti-entropy on reconnect: each side sends only what the other lacks
 * a.merge(b.deltaFor(a.digest()), 1_020);
 * ```
 */
export * from './codec.js';
export { DotContext, subtractRanges } from './context.js';
export { joinDeltas } from './delta-join.js';
export * from './hlc.js';
export * from './limits.js';
export * from './lww.js';
export * from './namespace.js';
export * from './pn-counter.js';
export { Register } from './register.js';
export type * from './types.js';
