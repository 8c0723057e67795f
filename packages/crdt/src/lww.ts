import { compareHlc, type Hlc } from './hlc.js';

/** A last-writer-wins register: the value written with the greatest stamp. */
export interface LwwRegister<T> {
  readonly value: T;
  readonly stamp: Hlc;
}

/**
 * Join of two LWW registers: the greater stamp wins; node id breaks ties in
 * wall time and logical counter, so every replica picks the same winner.
 * Commutative, associative and idempotent (stamps are unique per write).
 */
export function mergeLww<T>(a: LwwRegister<T>, b: LwwRegister<T>): LwwRegister<T> {
  return compareHlc(a.stamp, b.stamp) >= 0 ? a : b;
}
