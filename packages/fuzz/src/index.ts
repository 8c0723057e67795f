/**
 * @parley/fuzz: structure-aware fuzzing of every Parley decoder.
 *
 * ```ts
 * import { runTarget, TARGETS } from '@parley/fuzz';
 * for (const t of TARGETS) console.log(runTarget(t, { seed: 1, iterations: 1000 }));
 * ```
 *
 * The CLI is `npm run fuzz` (see README.md); the contract each decoder is held to is in contract.ts.
 */
export { checkInput, checkValid, type FailureKind, type Outcome } from './contract.js';
export { bytesEqual, deepEqual, footprint, hex } from './equal.js';
export { Gen } from './gen.js';
export { mutate } from './mutate.js';
export { derivedRandom, type Failure, makeInput, Pool, runTarget, split, type TargetStats } from './runner.js';
export type { AnyTarget, Target } from './target.js';
export { selectTargets, TARGETS } from './targets/index.js';
