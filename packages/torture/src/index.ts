/** `@parley/torture`: the harness's parts, for its tests and for scripts. */
export { Cluster, type ClusterConfig } from './cluster.js';
export { ProcessTable } from './procs.js';
export { Random } from './random.js';
