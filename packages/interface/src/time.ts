/**
 * Time enters Parley only through these contracts, so the simulator can run
 * every protocol on virtual time.
 */

/** Wall-clock reading in milliseconds since the Unix epoch. */
export interface Clock {
  nowMs(): number;
}

/** Cancels a scheduled callback; calling it twice is harmless. */
export type Cancel = () => void;

/** Runs callbacks after a delay measured on the same time base as a Clock. */
export interface Scheduler {
  after(delayMs: number, fn: () => void): Cancel;
}

/** The real clock and timers of the process (not for the pure packages). */
export const systemClock: Clock = { nowMs: () => Date.now() };

export const systemScheduler: Scheduler = {
  after(delayMs, fn) {
    const handle = setTimeout(fn, delayMs);
    return () => clearTimeout(handle);
  },
};

const SETTLED = Promise.resolve();

/**
 * Runs `fn` as a microtask, where `queueMicrotask` would queue it (same
 * queue, same order, in the simulator too), without the AsyncResource Node
 * wraps every `queueMicrotask` callback in: 11 % of an awaited-read loop's
 * profile. `fn` must not throw.
 */
export function microtask(fn: () => void): void {
  void SETTLED.then(fn);
}
