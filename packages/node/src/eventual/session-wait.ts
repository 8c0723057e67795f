/**
 * What a call with a session does first on an eventual namespace
 * (docs/sessions.md, "Eventual namespaces"): wait until the local replica
 * covers the session's frontier for the namespace — every dot
 * `(origin, 1..seq)` it names — and meanwhile pull what is missing from the
 * replicas this node knows (an anti-entropy round with each, again after a
 * backoff while still behind). At the call's deadline it fails with
 * `session_behind` and nothing was read or written.
 */
import { SessionBehindError } from '@parley/interface';
import type { NodeContext } from '../context.js';

/** First pause between pull rounds while still behind; it doubles up to MAX_PULL_PAUSE_MS. */
const FIRST_PULL_PAUSE_MS = 20;
const MAX_PULL_PAUSE_MS = 500;

export interface SessionWaitPort {
  readonly name: string;
  readonly ctx: NodeContext;
  /** Whether the replica covers `frontier` now. */
  covers(frontier: ReadonlyMap<string, number>): boolean;
  /** One anti-entropy round with every replica known (and connected peer); resolves when all answered or failed. */
  pullRound(): Promise<void>;
  readonly closed: boolean;
}

/** Resolves once the replica covers `frontier`; SessionBehindError after `timeoutMs`. */
export async function waitForSession(
  port: SessionWaitPort,
  frontier: ReadonlyMap<string, number> | undefined,
  timeoutMs: number,
): Promise<void> {
  if (frontier === undefined || frontier.size === 0 || port.covers(frontier)) return;
  const { scheduler, clock } = port.ctx;
  const deadline = clock.nowMs() + timeoutMs;
  let pause = FIRST_PULL_PAUSE_MS;
  for (;;) {
    const left = deadline - clock.nowMs();
    if (left <= 0 || port.closed) break;
    let cancel: (() => void) | undefined;
    await Promise.race([
      port.pullRound(),
      new Promise<void>((resolve) => {
        cancel = scheduler.after(left, resolve);
      }),
    ]);
    cancel?.();
    if (port.covers(frontier)) return;
    const rest = deadline - clock.nowMs();
    if (rest <= 0) break;
    await new Promise<void>((resolve) => scheduler.after(Math.min(pause, rest), resolve));
    pause = Math.min(MAX_PULL_PAUSE_MS, pause * 2);
    if (port.covers(frontier)) return;
  }
  const missing: Record<string, number> = {};
  let n = 0;
  for (const [origin, seq] of frontier) {
    if (port.covers(new Map([[origin, seq]]))) continue;
    if (n++ < 8) missing[origin] = seq;
  }
  throw new SessionBehindError(
    `eventual namespace '${port.name}' has not seen what the session has within ${timeoutMs} ms`,
    { namespace: port.name, timeoutMs, missing },
  );
}
