/**
 * `@parley/testing`: run your own agent code on N simulated Parley nodes
 * inside your test runner, break the network, crash and skew nodes, and get
 * Parley's checkers' verdict. See docs/testing.md.
 */
export { describeCall, SimulationExpectationError } from './checks.js';
export { MAX_NODES, type NemesisFaults, SimCluster, type SimulateOptions } from './cluster.js';
export { type Duration, toMs } from './duration.js';
export type { RecordedCall } from './recorder.js';
export { chooseSeed, replayCommand, type SimulateResult, simulate } from './simulate.js';
