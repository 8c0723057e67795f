/**
 * The node's client sessions with the coord state machine. Every write
 * carries (clientId, seq) from one of them, so a write retried after a lost
 * answer or a leader change is applied once and answered with its first
 * result (coord's session table, the only dedupe). A session has at most
 * `maxInFlight` commands in flight; the pool opens up to `maxSessions` of
 * them (registered through the log) and queues further calls, boundedly.
 * Idle sessions are kept alive with a `noop` well within coord's idle TTL.
 */
import { type Command, type Operation, SessionSequencer, unwrap } from '@parley/coord';
import { type Cancel, TimeoutError, UnavailableError } from '@parley/interface';
import type { NodeContext } from '../context.js';
import type { ResolvedStrongOptions } from './options.js';
import type { StrongRouter } from './router.js';

/** Commands in flight per session (coord remembers 64 results per session). */
export const SESSION_IN_FLIGHT = 32;
/** Idle time after which a session is refreshed with a noop (coord forgets idle sessions after 1 day). */
const KEEPALIVE_IDLE_MS = 3_600_000;

interface Session {
  seq: SessionSequencer;
  lastUsedMs: number;
}

interface QueuedCall {
  resolve(s: Session): void;
  reject(err: unknown): void;
  cancelTimer: Cancel;
}

export class SessionPool {
  private sessions: Session[] = [];
  private registering = 0;
  private queue: QueuedCall[] = [];
  private keepalive: Cancel | undefined;
  private closed = false;

  constructor(
    private readonly ctx: NodeContext,
    private readonly router: StrongRouter,
    private readonly options: ResolvedStrongOptions,
  ) {}

  start(): void {
    const loop = () => {
      if (this.closed) return;
      this.refreshIdle();
      this.keepalive = this.ctx.scheduler.after(KEEPALIVE_IDLE_MS / 6, loop);
    };
    this.keepalive = this.ctx.scheduler.after(KEEPALIVE_IDLE_MS / 6, loop);
  }

  close(): void {
    this.closed = true;
    this.keepalive?.();
    for (const q of this.queue.splice(0)) {
      q.cancelTimer();
      q.reject(new UnavailableError('strong module closed'));
    }
  }

  get size(): number {
    return this.sessions.length;
  }

  /**
   * Runs `op` as one session command until it is answered or `deadlineMs`
   * passes. A session the state machine no longer knows is dropped and the
   * command re-issued once under a fresh session (it was not applied).
   */
  async command(op: Operation, deadlineMs: number, attemptCapMs?: number): Promise<ReturnType<typeof unwrap>> {
    for (let attempt = 0; ; attempt++) {
      const s = await this.acquire(deadlineMs);
      const { nowMs: _unused, ...command } = s.seq.command(op, 0);
      const seq = command.seq as number;
      let result: Awaited<ReturnType<StrongRouter['send']>>;
      try {
        result = await this.router.send({ kind: 'write', command }, deadlineMs, attemptCapMs);
      } finally {
        s.seq.done(seq);
        s.lastUsedMs = this.ctx.clock.nowMs();
        this.release();
      }
      if (!('result' in result)) throw new UnavailableError('unexpected answer to a write');
      const r = result.result;
      const reason = !r.ok ? (r.error.details as { reason?: unknown }).reason : undefined;
      if ((reason === 'session_expired' || reason === 'stale_sequence') && attempt === 0) {
        this.drop(s);
        continue;
      }
      return unwrap(r);
    }
  }

  private acquire(deadlineMs: number): Promise<Session> {
    let best: Session | undefined;
    for (const s of this.sessions) {
      if (s.seq.pending < SESSION_IN_FLIGHT && (!best || s.seq.pending < best.seq.pending)) best = s;
    }
    // Prefer an idle slot; open another session only when every open one is busy.
    if (best && best.seq.pending === 0) return Promise.resolve(best);
    if (this.sessions.length + this.registering < this.options.maxSessions && (!best || best.seq.pending > 0)) {
      if (best) {
        // Use the open one now and open another in the background for the next calls.
        this.open(deadlineMs).catch(() => {});
        return Promise.resolve(best);
      }
      return this.open(deadlineMs).then(() => this.acquire(deadlineMs));
    }
    if (best) return Promise.resolve(best);
    if (this.queue.length >= this.options.maxQueuedCalls) {
      return Promise.reject(new UnavailableError('too many strong calls queued on this node'));
    }
    return new Promise<Session>((resolve, reject) => {
      const q: QueuedCall = {
        resolve,
        reject,
        cancelTimer: this.ctx.scheduler.after(Math.max(1, deadlineMs - this.ctx.clock.nowMs()), () => {
          this.queue = this.queue.filter((x) => x !== q);
          reject(new TimeoutError('no session slot freed before the deadline'));
        }),
      };
      this.queue.push(q);
    });
  }

  private release(): void {
    while (this.queue.length > 0) {
      const free = this.sessions.find((s) => s.seq.pending < SESSION_IN_FLIGHT);
      if (!free) return;
      const q = this.queue.shift() as QueuedCall;
      q.cancelTimer();
      q.resolve(free);
    }
  }

  private async open(deadlineMs: number): Promise<void> {
    this.registering++;
    try {
      const answer = await this.router.send({ kind: 'register' }, deadlineMs);
      if (!('result' in answer)) throw new UnavailableError('unexpected answer to register_session');
      const value = unwrap(answer.result);
      if (value.type !== 'session') throw new UnavailableError('unexpected answer to register_session');
      if (this.closed) return;
      this.sessions.push({
        seq: new SessionSequencer(value.clientId, SESSION_IN_FLIGHT),
        lastUsedMs: this.ctx.clock.nowMs(),
      });
      this.release();
    } finally {
      this.registering--;
    }
  }

  private drop(s: Session): void {
    this.sessions = this.sessions.filter((x) => x !== s);
  }

  private refreshIdle(): void {
    const now = this.ctx.clock.nowMs();
    for (const s of this.sessions) {
      if (s.seq.pending > 0 || now - s.lastUsedMs < KEEPALIVE_IDLE_MS) continue;
      s.lastUsedMs = now;
      const { nowMs: _unused, ...command } = s.seq.command({ type: 'noop' }, 0) as Command;
      this.router
        .send({ kind: 'write', command }, now + this.options.callTimeoutMs)
        .catch(() => {})
        .finally(() => s.seq.done(command.seq as number));
    }
  }
}
