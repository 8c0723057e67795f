/**
 * @parley/interface — the contracts every Parley package shares.
 *
 * @example
 * ```ts
 * import { SeededRandom, VersionMismatchError, isParleyError } from '@parley/interface';
 * const rng = new SeededRandom(42);
 * rng.int(6); // same value for seed 42, every run
 * try { ... } catch (err) { if (isParleyError(err, 'version_mismatch')) retry(); }
 * ```
 */
export * from './api-shapes.js';
export * from './bytes.js';
export * from './errors.js';
export * from './events.js';
export * from './json.js';
export * from './memory-raft-log.js';
export * from './names.js';
export * from './raft-log.js';
export * from './random.js';
export * from './seed.js';
export * from './storage.js';
export * from './time.js';
export * from './transport.js';
