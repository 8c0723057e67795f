/**
 * What the simulated network, disks and hosts need from the simulation:
 * global time, the event queue, and the trace. Kept narrow so each part can
 * be tested on its own.
 */
import type { QueuedEvent } from './queue.js';

export interface SimKernel {
  /** Global simulated time in ms since the start of the run. */
  nowMs(): number;
  /** Runs `fn` after `delayMs` of global time (0: after every event already due now). */
  schedule(delayMs: number, label: string, fn: () => void): QueuedEvent;
  cancel(ev: QueuedEvent): void;
  /** Appends one line to the run's trace (part of the determinism fingerprint). */
  trace(line: string): void;
  /** Reports an exception thrown by simulated code (a `crash` failure). */
  crashed(host: string, err: unknown): void;
}

/** A promise that never settles: what a crashed process observes of its own pending I/O. */
export function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

/** An integer-only Bernoulli draw: true with probability `rate` (0..1), resolved to parts per million. */
export function chance(rng: { int(n: number): number }, rate: number): boolean {
  if (!(rate > 0)) return false;
  if (rate >= 1) return true;
  return rng.int(1_000_000) < Math.round(rate * 1_000_000);
}

/** A uniformly drawn integer in [min, max]. */
export function between(rng: { int(n: number): number }, min: number, max: number): number {
  const lo = Math.trunc(min);
  const hi = Math.trunc(max);
  if (hi <= lo) return lo;
  return lo + rng.int(hi - lo + 1);
}
