/**
 * @parley/conformance — one test suite for Parley's strong side, run against
 * every StrongBackend: the built-in Raft group and etcd.
 *
 * @example
 * ```ts
 * // a test file
 * import { raftBackend, strongConformance } from '@parley/conformance';
 * strongConformance(raftBackend);
 * ```
 */
export * from './backends.js';
export { JumpClock } from './clock.js';
export { strongConformance } from './suite/index.js';
