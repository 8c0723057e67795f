/**
 * History checkers for Parley: histories and their exports, linearizability with
 * its models, convergence, fencing, durability and an invariant registry.
 */
export * from './history.js';
