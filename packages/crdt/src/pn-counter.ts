import { InvalidArgumentError } from '@parley/interface';

/** One node's share of a PN-counter: its increments and decrements, both ≥ 0 and only growing. */
export interface PnShare {
  readonly inc: number;
  readonly dec: number;
}

/** A PN-counter: one share per node. Its value may go negative. */
export type PnCounter = ReadonlyMap<string, PnShare>;

/** The counter's value: Σ inc − Σ dec. */
export function pnValue(counter: PnCounter): number {
  let total = 0;
  for (const share of counter.values()) total += share.inc - share.dec;
  return total;
}

/** Adds `by` (a safe integer, may be negative) to `node`'s share. Returns a new counter. */
export function pnIncrement(counter: PnCounter, node: string, by: number): PnCounter {
  const share = counter.get(node) ?? { inc: 0, dec: 0 };
  const next = addToShare(share, by);
  const out = new Map(counter);
  out.set(node, next);
  return out;
}

/** `share` with `by` added; throws InvalidArgumentError for a non-integer or overflowing amount. */
export function addToShare(share: PnShare, by: number): PnShare {
  if (!Number.isSafeInteger(by)) throw new InvalidArgumentError(`increment must be a safe integer, got ${by}`);
  const inc = by > 0 ? share.inc + by : share.inc;
  const dec = by < 0 ? share.dec - by : share.dec;
  if (!Number.isSafeInteger(inc) || !Number.isSafeInteger(dec)) {
    throw new InvalidArgumentError('counter share would exceed the safe integer range');
  }
  return { inc, dec };
}

/** Join: per node, the larger inc and the larger dec. Commutative, associative, idempotent. */
export function mergePn(a: PnCounter, b: PnCounter): PnCounter {
  const out = new Map(a);
  for (const [node, s] of b) {
    const mine = out.get(node);
    out.set(node, mine ? { inc: Math.max(mine.inc, s.inc), dec: Math.max(mine.dec, s.dec) } : s);
  }
  return out;
}
