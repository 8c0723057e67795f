/**
 * @parley/etcd — Parley's strong side on an existing etcd v3 cluster: an
 * `EtcdBackend` implements coord's StrongBackend seam (entries, CAS, claims,
 * lists, namespaces, watches; leases and locks) over the official etcd3
 * client, with the same limits and typed errors as the built-in Raft backend.
 *
 * @example
 * ```ts
 * import { EtcdBackend } from '@parley/etcd';
 * const backend = new EtcdBackend({ endpoints: ['http://127.0.0.1:2379'], prefix: '/parley' });
 * await backend.write({ type: 'set', namespace: 'jobs', key: 'cfg', value: { pct: 25 } });
 * await backend.close();
 * ```
 *
 * `@parley/etcd/testing/etcd-cluster` starts etcd members on loopback (tests,
 * benchmarks): `const c = await EtcdCluster.start(findEtcd()!, dir)`.
 */
export { DEFAULT_CALL_TIMEOUT_MS, EtcdBackend, type EtcdBackendOptions } from './backend.js';
export type { EtcdContext, FenceCheck, OpCall, OpHandler } from './context.js';
export { DEFAULT_PREFIX, KeyLayout } from './keys.js';
export { createEtcdStrongSide, type EtcdStrongOptions, etcdStrong } from './node-strong.js';
export { decodeEntryRecord, type EntryRecord, encodeEntryRecord } from './record.js';
export { ETCD_MISSING, EtcdCluster, findEtcd } from './testing/etcd-cluster.js';
export { freePort } from './testing/ports.js';
export { revisionOf, versionOf } from './version.js';
