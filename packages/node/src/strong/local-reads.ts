/**
 * Strong reads a member answers from its own applied state
 * (docs/guarantees.md, "Strong reads"):
 *
 * - **serializable**: at once, with no leader contact (etcd's
 *   `--consistency=s`). The answer is this member's state at its applied
 *   index: a prefix of the log, possibly stale, never an entry that is not
 *   committed. One member's answers never go back while it runs.
 * - **bounded** (`maxStalenessMs` S, `maxLagEntries` N): only while the
 *   member can prove that its state holds every write acknowledged S ms
 *   before the call, except at most the last N entries committed by then.
 *   The proof is a **read point** (t, I): a ReadIndex round this member asked
 *   its leader for at time t on its own clock, answered with the leader's
 *   commit index I once the leader confirmed it still led (a heartbeat round,
 *   or its lease). Every write acknowledged before t has an index ≤ I, so a
 *   state applied through I − N holds all of them but the last N entries. The
 *   read is served when its point is no older than S (measured on this
 *   member's clock, with a 0.1% rate margin: no bound on the skew between
 *   nodes is assumed) and applied ≥ I − N; else it asks for a new point (one
 *   round shared by every read waiting, re-asked every tick while unanswered)
 *   and waits, at most one attempt's time (`attemptTimeoutMs`) or its deadline;
 *   then, or at once when this member knows no leader, it fails with
 *   `staleness_exceeded` (retryable). A point older than S/2 is refreshed
 *   ahead, so a steady flow of reads is served without waiting.
 *
 * A clock seen stepping back drops every point (their ages would read too
 * young); a step back between two readings of the clock that the member never
 * observes is outside the proof (docs/guarantees.md).
 */
import type { Operation, ReadConsistency } from '@parley/coord';
import {
  type Cancel,
  ClosedError,
  type PeerId,
  SessionBehindError,
  StalenessExceededError,
  UnavailableError,
} from '@parley/interface';
import type { NodeContext } from '../context.js';
import type { ResolvedStrongOptions } from './options.js';
import { MAX_PENDING_READS, type StrongReplica } from './replica.js';
import type { IndexedResult } from './wire.js';

/** Local clocks may run this much fast or slow (0.1%): ages are stretched by it. */
export const RATE_MARGIN = 0.001;
/** Read points asked and not yet answered, at most (the oldest is forgotten). */
const MAX_ASKED = 16;

export type LocalConsistency = Exclude<ReadConsistency, { level: 'linearizable' }>;

/** A read point: every write acknowledged before `atMs` (this member's clock) has a log index ≤ `index`. */
export interface ReadPoint {
  readonly atMs: number;
  readonly index: number;
}

export interface LocalReadsSeams {
  /** This member has known no leader for an election timeout (./router.ts): no point can come. */
  knowsNoLeader(): boolean;
  leaderHint(): PeerId | undefined;
}

export class LocalReads {
  /** The newest read point this member holds. */
  point: ReadPoint | undefined;
  readonly stats = {
    serializable: 0,
    bounded: 0,
    waited: 0,
    refused: 0,
    behind: 0,
    pointsAsked: 0,
    pointsAnswered: 0,
  };
  /** Points asked and not answered: context → the time asked. */
  private readonly asked = new Map<string, number>();
  private readonly waiting = new Set<() => void>();
  private readonly timers = new Set<Cancel>();
  private highWaterMs = Number.NEGATIVE_INFINITY;
  private counter = 0;
  private closed = false;
  private readonly enc = new TextEncoder();
  private readonly dec = new TextDecoder();

  constructor(
    private readonly ctx: Pick<NodeContext, 'peerId' | 'clock' | 'scheduler'>,
    private readonly replica: StrongReplica,
    private readonly options: Pick<ResolvedStrongOptions, 'tickMs' | 'attemptTimeoutMs'>,
    private readonly seams: LocalReadsSeams,
  ) {}

  start(): void {
    this.replica.onReadPoint((index, context) => this.answered(index, context));
    this.replica.onApplied(() => this.wake());
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) t();
    this.timers.clear();
    const checks = [...this.waiting];
    this.waiting.clear();
    for (const c of checks) c();
  }

  /** This node's clock; a step back forgets every read point and every point asked. */
  private now(): number {
    const now = this.ctx.clock.nowMs();
    if (now < this.highWaterMs) {
      this.point = undefined;
      this.asked.clear();
    }
    this.highWaterMs = now;
    return now;
  }

  /**
   * Serves `op` from this member's state under `consistency`, or fails (see
   * the module comment), with the index the state was applied through. Only a
   * member has a state to answer from: a node outside the group forwards
   * (./read-write.ts), and a member refuses a forwarded read once it is no
   * longer one (./router.ts). With a session (`minIndex` > 0, its token) the
   * state must also be applied through `minIndex`: the read waits for it as a
   * bounded read waits for its point, else fails with `session_behind`.
   */
  serve(op: Operation, consistency: LocalConsistency, deadlineMs: number, minIndex = 0): Promise<IndexedResult> {
    if (this.closed) return Promise.reject(new ClosedError('strong module'));
    if (this.replica.fatal !== undefined) return Promise.reject(this.replica.fatal);
    const start = this.now();
    const limitMs = Math.min(deadlineMs, start + this.options.attemptTimeoutMs);
    const caughtUp = () => this.caughtUp(minIndex);
    if (consistency.level === 'serializable') {
      return this.when(op, caughtUp, limitMs, 'serializable', (now) =>
        now >= limitMs || this.cannotCatchUp(minIndex) ? this.behindError(minIndex) : undefined,
      );
    }
    const { maxStalenessMs, maxLagEntries } = consistency;
    // A point taken at or after this horizon is no older than the bound, however fast this clock runs.
    const horizon = start - maxStalenessMs / (1 + RATE_MARGIN);
    const proven = () => {
      const p = this.point;
      return p !== undefined && p.atMs >= horizon && this.replica.appliedThrough >= p.index - maxLagEntries;
    };
    if (proven() && caughtUp()) this.refreshAhead(start, maxStalenessMs);
    return this.when(
      op,
      () => proven() && caughtUp(),
      limitMs,
      'bounded',
      (now) => {
        const fresh = this.point !== undefined && this.point.atMs >= horizon;
        if (now >= limitMs || (!fresh && this.seams.knowsNoLeader())) {
          return proven() ? this.behindError(minIndex) : this.staleError(now, maxStalenessMs, maxLagEntries);
        }
        if (proven() && this.cannotCatchUp(minIndex)) return this.behindError(minIndex);
        if (!fresh) this.ask(horizon, now);
        return undefined;
      },
    );
  }

  /** This member's state is applied through `minIndex`. */
  private caughtUp(minIndex: number): boolean {
    return this.replica.appliedThrough >= minIndex;
  }

  /** Short of `minIndex`, with no leader known to learn it from nor a commit index reaching it. */
  private cannotCatchUp(minIndex: number): boolean {
    return !this.caughtUp(minIndex) && this.replica.driver.probe.committed < minIndex && this.seams.knowsNoLeader();
  }

  private behindError(minIndex: number): SessionBehindError {
    this.stats.behind++;
    return new SessionBehindError(
      `this member has applied through ${this.replica.appliedThrough}, short of the session's ${minIndex}`,
      {
        need: minIndex,
        applied: this.replica.appliedThrough,
        ...(this.seams.leaderHint() === undefined ? {} : { leaderHint: this.seams.leaderHint() }),
      },
    );
  }

  private answer(op: Operation, kind: 'serializable' | 'bounded'): IndexedResult {
    this.stats[kind]++;
    return { result: this.replica.localQuery(op), index: this.replica.appliedThrough };
  }

  /**
   * Answers `op` once `servable()` holds: at once, or on a later apply, read
   * point or tick, until `limitMs`. At each check that cannot serve, `step`
   * returns the error to refuse with, or undefined to go on waiting (it may
   * ask for a read point). At most MAX_PENDING_READS reads wait.
   */
  private when(
    op: Operation,
    servable: () => boolean,
    limitMs: number,
    kind: 'serializable' | 'bounded',
    step: (now: number) => Error | undefined,
  ): Promise<IndexedResult> {
    if (servable()) return Promise.resolve(this.answer(op, kind));
    if (this.waiting.size >= MAX_PENDING_READS) {
      return Promise.reject(new UnavailableError(`${MAX_PENDING_READS} ${kind} reads are waiting on this member`));
    }
    this.stats.waited++;
    return new Promise<IndexedResult>((resolve, reject) => {
      let cancelTimer: Cancel | undefined;
      const done = () => {
        this.waiting.delete(check);
        if (cancelTimer) {
          cancelTimer();
          this.timers.delete(cancelTimer);
        }
      };
      const check = () => {
        if (this.closed) {
          done();
          reject(new ClosedError('strong module'));
          return;
        }
        if (this.replica.fatal !== undefined) {
          done();
          reject(this.replica.fatal);
          return;
        }
        if (servable()) {
          done();
          resolve(this.answer(op, kind));
          return;
        }
        const refusal = step(this.now());
        if (refusal !== undefined) {
          done();
          this.stats.refused++;
          reject(refusal);
        }
      };
      const tick = () => {
        if (cancelTimer) this.timers.delete(cancelTimer);
        cancelTimer = undefined;
        if (!this.waiting.has(check)) return;
        check();
        if (!this.waiting.has(check)) return;
        cancelTimer = this.ctx.scheduler.after(
          Math.max(1, Math.min(this.options.tickMs, limitMs - this.ctx.clock.nowMs())),
          tick,
        );
        this.timers.add(cancelTimer);
      };
      this.waiting.add(check);
      check();
      if (this.waiting.has(check)) tick();
    });
  }

  private staleError(now: number, maxStalenessMs: number, maxLagEntries: number): StalenessExceededError {
    const p = this.point;
    return new StalenessExceededError(
      this.seams.knowsNoLeader()
        ? 'this member knows no leader to prove its state within the bound'
        : 'this member could not prove its state within the bound in time',
      {
        maxStalenessMs,
        maxLagEntries,
        appliedIndex: this.replica.appliedThrough,
        ...(p === undefined ? {} : { readPointAgeMs: Math.max(0, now - p.atMs), readPointIndex: p.index }),
        ...(this.seams.leaderHint() === undefined ? {} : { leaderHint: this.seams.leaderHint() }),
      },
    );
  }

  /** A point older than half the bound is renewed before the reads need it. */
  private refreshAhead(now: number, maxStalenessMs: number): void {
    const p = this.point;
    if (p !== undefined && now - p.atMs > maxStalenessMs / 2) this.ask(now - maxStalenessMs / 2, now);
  }

  /** Asks a read point unless one asked at or after `minAtMs`, within the last tick, is on its way. */
  private ask(minAtMs: number, now: number): void {
    for (const at of this.asked.values()) if (at >= minAtMs && now - at < this.options.tickMs) return;
    if (this.asked.size >= MAX_ASKED) {
      const oldest = this.asked.keys().next().value as string;
      this.asked.delete(oldest);
    }
    const context = `rp:${this.ctx.peerId}#${++this.counter}`;
    this.asked.set(context, now);
    try {
      this.replica.requestReadPoint(this.enc.encode(context));
      this.stats.pointsAsked++;
    } catch {
      this.asked.delete(context); // no leader known, or too many reads pending there: the next tick asks again
    }
  }

  private answered(index: number, context: Uint8Array): void {
    const key = this.dec.decode(context);
    const at = this.asked.get(key);
    if (at === undefined) return;
    this.asked.delete(key);
    // Points asked before this one are answered by now or lost: this one is newer.
    for (const [k, t] of this.asked) if (t <= at) this.asked.delete(k);
    this.stats.pointsAnswered++;
    const p = this.point;
    if (p === undefined || at > p.atMs || (at === p.atMs && index > p.index)) this.point = { atMs: at, index };
    this.wake();
  }

  private wake(): void {
    if (this.waiting.size === 0) return;
    for (const check of [...this.waiting]) check();
  }
}
