/**
 * `@parley/sim/testing`: run your own agent code on N simulated Parley nodes
 * inside your test runner, break the network, crash and skew nodes, and get
 * Parley's checkers' verdict. See docs/testing.md.
 */
export { describeCall, SimulationExpectationError } from './testing/checks.js';
export { MAX_NODES, type NemesisFaults, SimCluster, type SimulateOptions } from './testing/cluster.js';
export { type Duration, toMs } from './testing/duration.js';
export type { RecordedCall } from './testing/recorder.js';
export { chooseSeed, replayCommand, type SimulateResult, simulate } from './testing/simulate.js';
