/** Session guarantees, causal consistency and bounded staleness over session histories. */
export * from './guarantees.js';
export * from './history.js';
export * from './staleness.js';
