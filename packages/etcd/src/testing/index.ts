/**
 * `@parley/etcd/testing` — etcd members on loopback for tests and benchmarks
 * (start, SIGKILL, restart; `findEtcd` finds the binary) and free ports.
 */
export { ETCD_MISSING, EtcdCluster, type EtcdClusterOptions, findEtcd } from './etcd-cluster.js';
export { freePort } from './ports.js';
