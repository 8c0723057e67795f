/**
 * @parley/etcd — Parley's strong side on an existing etcd v3 cluster.
 *
 * `@parley/etcd/testing/etcd-cluster` starts etcd members on loopback (tests,
 * benchmarks): `const c = await EtcdCluster.start(findEtcd()!, dir)`.
 */
export { ETCD_MISSING, EtcdCluster, findEtcd } from './testing/etcd-cluster.js';
export { freePort } from './testing/ports.js';
