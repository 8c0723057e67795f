/** Small helpers shared by the suite's files. */
import { type ErrorCode, isParleyError } from '@parley/interface';

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
