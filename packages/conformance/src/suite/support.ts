/** Small helpers shared by the suite's files. */
import { type ErrorCode, isParleyError } from '@parley/interface';
import { it } from 'vitest';
import type { BackendUnderTest } from '../backends.js';

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
