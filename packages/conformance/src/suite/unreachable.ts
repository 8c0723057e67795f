/** A backend that cannot be reached answers `unavailable` or `timeout` within the call's bound, never hangs. */
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { gate } from './support.js';

const BOUND_MS = 1_500;
/** Slack over the bound for a loaded machine. */
const SLACK_MS = 3_000;

export function unreachableSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('unreachable backend', () => {
    it('writes fail with unavailable or timeout within their bound', async () => {
      const node = await b.unreachableNode();
      const ns = node.strong('cut-off');
      for (const call of [
        () => ns.set('k', 1, { timeoutMs: BOUND_MS }),
        () => ns.set('k', 1, { timeoutMs: BOUND_MS, ifNotExists: true }),
      ]) {
        const started = Date.now();
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(['unavailable', 'timeout']).toContain((err as { code?: string } | undefined)?.code);
        expect(Date.now() - started).toBeLessThan(BOUND_MS + SLACK_MS);
      }
    });
  });
}
