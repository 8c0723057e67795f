/**
 * The node's client sessions with the coord state machine. Every write
 * carries (clientId, seq) from one of them, so a write retried after a lost
 * answer or a leader change is applied once and answered with its first
 * result (coord's session table, the only dedupe), as the client sessions of
 * the Raft dissertation (§6.3) do.
 *
 * A retry must find its answer: coord remembers `maxResultsPerSession` (64)
 * results per session and forgets the oldest beyond, whatever is still in
 * flight. So a session bounds its *window* (./coord SessionSequencer): at most
 * 32 seqs from its oldest unanswered command to its newest. A command whose
 * answer was lost holds back at most 31 later ones on its session while the
 * router retries it; the pool serves the other calls from its other sessions
 * (up to `maxSessions`, registered through the log) and queues the rest,
 * boundedly. A blocking lock wait holds its window for the whole wait, so
 * waits get sessions of their own, never shared with quick calls.
 *
 * What the window cannot cover is answered as an unknown outcome, never
 * re-issued: a retry refused with `stale_sequence` (its result was forgotten
 * under coord's global byte bound) or `session_expired` (the session was
 * evicted or timed out meanwhile) may well have been applied, so the call
 * fails with `outcome_unknown`. Only a `session_expired` refusal of a
 * command's single arrival (one attempt) proves it was not applied; that
 * command is re-issued once under a fresh session.
 *
 * Slots are reserved synchronously: calls made in the same turn get distinct
 * seqs. Idle sessions are kept alive with a `noop` well within coord's idle TTL.
 *
 * A queued call never outlives its deadline, whatever the timers do: each
 * hand-out of freed room first fails the queued calls whose deadline has
 * passed (a wall clock that jumped, a loop that ran late), with the error
 * their own timer would have given. A registration is opened only for a call
 * that can still use it, and one that failed is retried after a backoff that
 * doubles up to REGISTER_BACKOFF_MAX_MS, on a timer: a group that cannot
 * register sessions (no leader) never turns the pool into a loop of
 * registrations that fail in the same turn.
 */
import {
  type Command,
  DEFAULT_LIMITS,
  type Operation,
  type OpResult,
  SessionSequencer,
  type StrongSessionRef,
  unwrap,
} from '@parley/coord';
import { type Cancel, OutcomeUnknownError, TimeoutError, UnavailableError } from '@parley/interface';
import type { NodeContext } from '../context.js';
import { observed } from './observed.js';
import type { ResolvedStrongOptions } from './options.js';
import type { SendTrace, StrongRouter } from './router.js';

/** Seqs from a session's oldest unanswered command to its newest (coord remembers 64 results per session). */
export const SESSION_WINDOW = 32;
/** Session registrations under way at once. */
const MAX_REGISTERING = 2;
/** Idle time after which a session is refreshed with a noop (coord forgets idle sessions after 1 day). */
const KEEPALIVE_IDLE_MS = 3_600_000;
/** First wait before a failed registration is retried; doubles per failure in a row. */
const REGISTER_BACKOFF_MS = 50;
/** Longest wait between registration attempts. */
const REGISTER_BACKOFF_MAX_MS = 1_000;

interface Session {
  seq: SessionSequencer;
  lastUsedMs: number;
  /** Serves blocking lock waits (set while it has commands in flight). */
  waits: boolean;
}

/** A reserved seq on a session: the command to send. */
interface Slot {
  session: Session;
  command: Omit<Command, 'nowMs'>;
  seq: number;
}

interface QueuedCall {
  op: Operation;
  waits: boolean;
  deadlineMs: number;
  resolve(slot: Slot): void;
  reject(err: unknown): void;
  cancelTimer: Cancel;
}

/** Bounds of one write: the call's deadline, one attempt's bound, and whether it may block (a lock wait). */
export interface CommandBounds {
  deadlineMs: number;
  attemptCapMs?: number;
  waits?: boolean;
  /** The caller's session: observes the index the command was answered at, when it succeeded. */
  session?: StrongSessionRef;
  /** The request may leave with the calls made after it in this turn (StrongCallOptions.coalesce). */
  coalesce?: boolean;
}

export class SessionPool {
  private sessions: Session[] = [];
  private registering = 0;
  private queue: QueuedCall[] = [];
  private keepalive: Cancel | undefined;
  /** Set while a failed registration's backoff runs: no registration is opened until it fires. */
  private backoff: Cancel | undefined;
  private failedRegistrations = 0;
  private closed = false;
  private readonly window: number;
  /** Calls that failed with `outcome_unknown` (observability). */
  outcomeUnknown = 0;

  constructor(
    private readonly ctx: NodeContext,
    private readonly router: StrongRouter,
    private readonly options: ResolvedStrongOptions,
  ) {
    const remembered = options.limits.maxResultsPerSession ?? DEFAULT_LIMITS.maxResultsPerSession;
    this.window = Math.max(1, Math.min(SESSION_WINDOW, remembered));
  }

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
    this.backoff?.();
    for (const q of this.queue.splice(0)) {
      q.cancelTimer();
      q.reject(new UnavailableError('strong module closed'));
    }
  }

  get size(): number {
    return this.sessions.length;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Runs `op` as one session command until it is answered or the deadline
   * passes. Rejects with `outcome_unknown` when the state machine no longer
   * remembers the answer of a command that may have been applied.
   */
  async command(op: Operation, bounds: CommandBounds): Promise<OpResult> {
    const waits = bounds.waits ?? false;
    for (let reissued = false; ; reissued = true) {
      const slot = await this.reserve(op, bounds.deadlineMs, waits);
      const trace: SendTrace = { attempts: 0 };
      let answer: Awaited<ReturnType<StrongRouter['send']>>;
      try {
        answer = await this.router.send(
          { kind: 'write', command: slot.command },
          bounds.deadlineMs,
          bounds.attemptCapMs,
          trace,
          bounds.coalesce === true,
        );
      } finally {
        this.finish(slot);
      }
      if (!('result' in answer)) throw new TimeoutError('unexpected answer to a write: its outcome is unknown');
      const r = answer.result;
      const reason = !r.ok ? (r.error.details as { reason?: unknown }).reason : undefined;
      if (reason !== 'session_expired' && reason !== 'stale_sequence') return observed(answer, bounds.session);
      if (reason === 'session_expired') this.drop(slot.session);
      // Refused at its only arrival: the session was gone before it was ever applied.
      if (reason === 'session_expired' && trace.attempts === 1 && !reissued) continue;
      this.outcomeUnknown++;
      throw new OutcomeUnknownError(
        `the ${op.type} was sent ${trace.attempts} times and its answer was lost; the state machine no longer remembers it (${reason}), so it may or may not have been applied (it will not be applied later): read to find out`,
        { reason, clientId: slot.session.seq.clientId, seq: slot.seq, attempts: trace.attempts },
      );
    }
  }

  /** A seq on a session with room, reserved now; or a place in the bounded queue. */
  private reserve(op: Operation, deadlineMs: number, waits: boolean): Promise<Slot> {
    if (this.closed) return Promise.reject(new UnavailableError('strong module closed'));
    const s = this.pick(waits);
    // Spread calls over sessions: one that is busy already gets company soon.
    if (!s || s.seq.span > 0) this.maybeOpen(deadlineMs);
    if (s) return Promise.resolve(this.take(s, op, waits));
    // Calls a registration under way will serve do not count against the queue's bound.
    if (this.queue.length >= this.options.maxQueuedCalls + this.registering * this.window) {
      return Promise.reject(new UnavailableError('too many strong calls queued on this node'));
    }
    const slot = new Promise<Slot>((resolve, reject) => {
      const q: QueuedCall = {
        op,
        waits,
        deadlineMs,
        resolve,
        reject,
        cancelTimer: this.ctx.scheduler.after(Math.max(1, deadlineMs - this.ctx.clock.nowMs()), () => {
          this.queue = this.queue.filter((x) => x !== q);
          reject(this.expiredError());
        }),
      };
      this.queue.push(q);
    });
    return slot;
  }

  /**
   * The session with the most room for a call of this kind (waits pack onto
   * sessions already waiting, quick calls spread out). Once no more sessions
   * may be opened, a call takes room on a session of the other kind rather
   * than wait in the queue.
   */
  private pick(waits: boolean): Session | undefined {
    let best: Session | undefined;
    let other: Session | undefined;
    for (const s of this.sessions) {
      if (s.seq.room <= 0) continue;
      if (s.seq.span > 0 && s.waits !== waits) {
        if (!other || s.seq.room > other.seq.room) other = s;
        continue;
      }
      const better = !best || (waits ? s.seq.room < best.seq.room : s.seq.room > best.seq.room);
      if (better) best = s;
    }
    if (best || this.sessions.length + this.registering < this.options.maxSessions) return best;
    return other;
  }

  private take(s: Session, op: Operation, waits: boolean): Slot {
    if (s.seq.span === 0) s.waits = waits;
    const { nowMs: _unused, ...command } = s.seq.command(op, 0);
    return { session: s, command, seq: command.seq as number };
  }

  private finish(slot: Slot): void {
    const s = slot.session;
    s.seq.done(slot.seq);
    s.lastUsedMs = this.ctx.clock.nowMs();
    this.release();
  }

  /** What a queued call whose deadline passed fails with (it was never sent). */
  private expiredError(): Error {
    return this.sessions.length === 0
      ? new UnavailableError('no client session could be registered before the deadline')
      : new TimeoutError('no session slot freed before the deadline');
  }

  /** Fails the queued calls whose deadline has passed, whether or not their timer fired yet. */
  private expire(): void {
    const now = this.ctx.clock.nowMs();
    if (!this.queue.some((q) => q.deadlineMs <= now)) return;
    const expired = this.queue.filter((q) => q.deadlineMs <= now);
    this.queue = this.queue.filter((q) => q.deadlineMs > now);
    for (const q of expired) {
      q.cancelTimer();
      q.reject(this.expiredError());
    }
  }

  /** Hands freed room to queued calls, in order within each kind. */
  private release(): void {
    this.expire();
    for (let i = 0; i < this.queue.length; ) {
      const q = this.queue[i] as QueuedCall;
      const s = this.pick(q.waits);
      if (!s) {
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      q.cancelTimer();
      q.resolve(this.take(s, q.op, q.waits));
    }
    const head = this.queue[0];
    if (head) this.maybeOpen(head.deadlineMs);
  }

  /** Registers another session, up to `maxSessions`, at most MAX_REGISTERING at a time. */
  private maybeOpen(deadlineMs: number): void {
    if (this.closed || this.backoff !== undefined || this.registering >= MAX_REGISTERING) return;
    if (this.sessions.length + this.registering >= this.options.maxSessions) return;
    if (deadlineMs <= this.ctx.clock.nowMs()) return;
    this.open(deadlineMs);
  }

  /** After a failed registration: none is opened until a backoff (doubling, bounded) has passed. */
  private backOff(): void {
    if (this.closed || this.backoff !== undefined) return;
    const ms = Math.min(REGISTER_BACKOFF_MAX_MS, REGISTER_BACKOFF_MS * 2 ** Math.min(this.failedRegistrations, 10));
    this.failedRegistrations++;
    this.backoff = this.ctx.scheduler.after(ms + this.ctx.random.int(Math.max(1, ms)), () => {
      this.backoff = undefined;
      this.release();
    });
  }

  private open(deadlineMs: number): void {
    this.registering++;
    this.router
      .send({ kind: 'register' }, deadlineMs)
      .then((answer) => {
        if (!('result' in answer)) throw new UnavailableError('unexpected answer to register_session');
        const value = unwrap(answer.result);
        if (value.type !== 'session') throw new UnavailableError('unexpected answer to register_session');
        if (this.closed) return;
        this.failedRegistrations = 0;
        this.sessions.push({
          seq: new SessionSequencer(value.clientId, this.window),
          lastUsedMs: this.ctx.clock.nowMs(),
          waits: false,
        });
      })
      .catch((err: unknown) => {
        this.backOff();
        // With no session to wait for, the queued calls fail as the registration did.
        if (this.sessions.length > 0 || this.registering > 1) return;
        for (const q of this.queue.splice(0)) {
          q.cancelTimer();
          q.reject(err);
        }
      })
      .finally(() => {
        this.registering--;
        this.release();
      });
  }

  private drop(s: Session): void {
    this.sessions = this.sessions.filter((x) => x !== s);
  }

  private refreshIdle(): void {
    const now = this.ctx.clock.nowMs();
    for (const s of this.sessions) {
      if (s.seq.span > 0 || now - s.lastUsedMs < KEEPALIVE_IDLE_MS) continue;
      s.lastUsedMs = now;
      const { nowMs: _unused, ...command } = s.seq.command({ type: 'noop' }, 0) as Command;
      this.router
        .send({ kind: 'write', command }, now + this.options.callTimeoutMs)
        .catch(() => {})
        .finally(() => {
          s.seq.done(command.seq as number);
          this.release();
        });
    }
  }
}
