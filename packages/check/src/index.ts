/**
 * History checkers for Parley: histories and their exports, linearizability with
 * its models, convergence, fencing, durability, session guarantees, causal
 * consistency, bounded staleness and an invariant registry.
 *
 * @example
 * ```ts
 * import { HistoryRecorder, checkLinearizability, parleyEntryModel } from '@parley/check';
 * const rec = new HistoryRecorder({ nowMs: () => sim.nowMs() });
 * rec.invoke('c1', 'set', { value: 1, ifNotExists: true }, 'cfg');
 * rec.ok('c1', { version: 'v1' });
 * const result = checkLinearizability(parleyEntryModel, rec.events(), { timeoutMs: 10_000 });
 * result.verdict; // 'linearizable'
 * ```
 */

export { type CheckCliIo, EXIT_LINEARIZABLE, EXIT_NOT_LINEARIZABLE, EXIT_UNKNOWN, runCheckCli } from './cli.js';
export * from './convergence.js';
export * from './durability.js';
export * from './edn.js';
export * from './exactly-once.js';
export * from './fencing.js';
export * from './history.js';
export * from './invariants.js';
export { CheckerSelfTestError, KNOWN_BAD, type KnownBadCase, runKnownBad } from './known-bad.js';
export * from './linearizability.js';
export * from './model.js';
export * from './models/index.js';
export * from './parse.js';
export * from './raft-invariants.js';
export * from './sessions/index.js';
