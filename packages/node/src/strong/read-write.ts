/**
 * The two kinds of strong call every API method reduces to: a write (a
 * session command through the log) and a read — linearizable (ReadIndex on
 * the leader) by default, or serializable / bounded, answered by this member
 * from its state (./local-reads.ts) or, from a node outside the group, by a
 * member it forwards to. Both resolve with the coord result's value or
 * reject with its typed error, within the call's time bound.
 */
import {
  checkOperationShape,
  type Operation,
  type OpResult,
  type StrongCallOptions,
  type StrongReadOptions,
} from '@parley/coord';
import { InvalidArgumentError, UnavailableError } from '@parley/interface';
import type { NodeContext } from '../context.js';
import type { LocalReads } from './local-reads.js';
import { observed } from './observed.js';
import type { ResolvedStrongOptions } from './options.js';
import type { StrongRouter } from './router.js';
import type { SessionPool } from './sessions.js';

/** Bound of the whole call (default `callTimeoutMs`) and extra time the leader may hold it (a blocking lock wait). */
export type CallOptions = StrongCallOptions;

export class StrongCalls {
  constructor(
    private readonly ctx: NodeContext,
    private readonly router: StrongRouter,
    private readonly pool: SessionPool,
    private readonly options: ResolvedStrongOptions,
    private readonly local: LocalReads,
  ) {}

  private deadline(o: CallOptions): { deadlineMs: number; attemptCapMs: number } {
    const timeoutMs = o.timeoutMs ?? this.options.callTimeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new InvalidArgumentError('timeoutMs must be positive');
    const waitMs = o.waitMs ?? 0;
    return {
      deadlineMs: this.ctx.clock.nowMs() + timeoutMs + waitMs,
      attemptCapMs: this.options.attemptTimeoutMs + waitMs,
    };
  }

  write(op: Operation, o: CallOptions = {}): Promise<OpResult> {
    checkOperationShape(op);
    const { deadlineMs, attemptCapMs } = this.deadline(o);
    const bounds = { deadlineMs, attemptCapMs, waits: (o.waitMs ?? 0) > 0, coalesce: o.coalesce === true };
    return this.pool.command(op, o.session === undefined ? bounds : { ...bounds, session: o.session });
  }

  /**
   * With a session, a serializable or bounded read is answered only from a
   * state applied through `session.strong` (the member waits for it, within
   * one attempt); a linearizable one always is (a read point is at or after
   * every commit acknowledged before it), so it needs no wait.
   */
  async read(op: Operation, o: StrongReadOptions = {}): Promise<OpResult> {
    checkOperationShape(op);
    const { deadlineMs, attemptCapMs } = this.deadline(o);
    const session = o.session;
    const c = o.consistency;
    if (c !== undefined && c.level !== 'linearizable') {
      const minIndex = session?.strong ?? 0;
      // A member answers from its own state; a node outside the group (which has none) asks a member to.
      const member = this.router.isMember();
      if (member) return observed(await this.local.serve(op, c, deadlineMs, minIndex), session);
      const answer = await this.router.send(
        { kind: 'local-read', command: { op }, consistency: c, ...(minIndex > 0 ? { minIndex } : {}) },
        deadlineMs,
        attemptCapMs,
      );
      if (!('result' in answer)) throw new UnavailableError('unexpected answer to a read');
      return observed(answer, session);
    }
    const answer = await this.router.send({ kind: 'read', command: { op } }, deadlineMs, attemptCapMs);
    if (!('result' in answer)) throw new UnavailableError('unexpected answer to a read');
    return observed(answer, session);
  }
}
