/**
 * History checkers for Parley: histories and their exports, linearizability with
 * its models, convergence, fencing, durability and an invariant registry.
 */
export * from './edn.js';
export * from './history.js';
export * from './linearizability.js';
export * from './model.js';
export * from './models.js';
export * from './parley-models.js';
export * from './parse.js';
