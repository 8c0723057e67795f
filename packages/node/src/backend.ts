/**
 * `@parley/node/backend` — what an implementation of the node's strong side
 * builds on (the etcd backend in @parley/etcd, the conformance suite's
 * wrapped backends, the simulator's recorded node): the public faces
 * `strong(ns)` and `locks(ns)` over any coord `StrongBackend`, and `doc(key)`
 * over any strong namespace.
 */
export { type StrongFaces, strongFaces } from './strong/backend-api.js';
export { strongDoc } from './strong/namespace.js';
