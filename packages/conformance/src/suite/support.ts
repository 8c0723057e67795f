/** Small helpers shared by the suite's files. */
import { type ErrorCode, isParleyError } from '@parley/interface';
import { it } from 'vitest';
import type { BackendUnderTest, StrongNode } from '../backends.js';
import type { JumpClock } from '../clock.js';

/** A matcher for `rejects.toSatisfy`: a ParleyError with this code. */
export const code = (c: ErrorCode) => (e: unknown) => isParleyError(e, c);

/** Resolves once `probe()` holds; rejects after `timeoutMs` (for events a backend delivers asynchronously). */
export async function until(
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * `it` for one backend: a test matching one of the backend's known gaps is
 * registered as skipped, its name saying why (so the gap shows in every run).
 */
export function gate(b: BackendUnderTest): (name: string, fn: () => Promise<void>, timeoutMs?: number) => void {
  return (name, fn, timeoutMs) => {
    const gap = b.gaps.find((g) => g.pattern.test(name));
    if (gap) it.skip(`${name} [not yet on ${b.kind}: ${gap.why}]`, fn);
    else it(name, fn, timeoutMs);
  };
}

/** Below coord's `maxTimeStepMs` (5 s): the most one command moves the built-in's time. */
const STEP_MS = 4_000;

/**
 * Moves `clock` forward by `ms` as time passes on a live cluster: in steps the
 * built-in backend accepts (one command moves its time at most `maxTimeStepMs`,
 * see docs/guarantees.md), with a write after each step, as the leader's
 * periodic `expire` would do.
 */
export async function passTime(node: StrongNode, clock: JumpClock, ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= STEP_MS) {
    clock.advance(Math.min(STEP_MS, left));
    await node.strong('conformance-clock').set('tick', clock.nowMs());
  }
}
