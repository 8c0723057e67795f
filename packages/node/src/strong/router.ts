/**
 * Routes a strong call to the group's leader: served here when this member
 * leads, else sent on the strong protocol to the leader this node knows of
 * (its own Raft view, or the hint of the last `not_leader` answer), else to
 * the members in turn. Retryable failures (`not_leader`, `unavailable`,
 * `timeout`, `closed`) are retried with the same request until the call's
 * deadline, so the caller sees one call; a write is the same session command
 * each time, answered once by coord's session table.
 *
 * A forwarded attempt does not wait out its whole `attemptTimeoutMs` on a
 * leader that is gone: when this member's Raft view names a new leader, every
 * attempt in flight to another peer fails at once with `not_leader` and that
 * hint, and the call re-sends the same session command there at once (an
 * attempt whose connection closes already fails with `unavailable`, by the
 * transport's contract). Between attempts the call backs off at most two
 * ticks, so a new leader is found soon after it is elected.
 *
 * Fail fast. A call that no leader can serve does not wait out its bound
 * when this node knows there is none: a member whose own Raft view has named
 * no leader for one election timeout (a follower cut off from the leader
 * pre-votes and forgets it after 1–2 election timeouts without a heartbeat;
 * an isolated leader steps down by check-quorum as soon; a learner, which
 * never campaigns, counts its leader out of view once it has not heard from
 * it for an election timeout; a member just started first waits for its own
 * election timer), or a node outside the
 * group that every member refused so, fails the call with `unavailable` at
 * once, if nothing it sent may have been proposed. A member with no
 * leader in its view sends nothing: it waits for one. Whether an attempt may
 * have been proposed is tracked per call: only refusals marked `unsent`
 * (./replica `refused`: the member did not lead, Raft refused the proposal)
 * and attempts never handed to a member prove it was not; a transport error,
 * a timeout, a leader that stepped down after proposing do not. A write or
 * membership change that may have been proposed is never answered
 * `unavailable`: it goes on being retried (the same session command, so a
 * leader elected meanwhile answers it once) and ends `timeout` at its
 * deadline, its outcome unknown. So a write failing with `unavailable` was
 * not applied and will not be. Reads have no outcome to hide: they fail fast
 * whenever the node knows no leader.
 *
 * The leader side of the protocol is here too (`serve`): a write is proposed
 * and answered once applied, a read goes through ReadIndex, membership
 * changes through Raft's conf entries.
 */
import type { CommandResult } from '@parley/coord';
import {
  type Cancel,
  ClosedError,
  isParleyError,
  NotLeaderError,
  ParleyError,
  type PeerId,
  StorageFailedError,
  TimeoutError,
  UnavailableError,
} from '@parley/interface';
import type { NodeContext } from '../context.js';
import type { LocalReads } from './local-reads.js';
import type { ResolvedStrongOptions } from './options.js';
import { type Pending, refused, type StrongReplica } from './replica.js';
import {
  type ChangesPage,
  decodeChanges,
  decodeIndexedResult,
  decodeRequest,
  encodeChanges,
  encodeIndexedResult,
  encodeRequest,
  type IndexedResult,
  STRONG_PROTOCOL,
  type StrongRequest,
} from './wire.js';

/** A result comes with the index the answering member had applied through (what a session observes). */
export type Answer = IndexedResult | { page: ChangesPage } | { done: true };

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type RequestBody = DistributiveOmit<StrongRequest, 'timeoutMs'>;

/** Network margin between a forwarded attempt's transport timeout and the leader's own wait. */
const NETWORK_MARGIN_MS = 250;
/** Leader hints followed in a row before backing off. */
const MAX_HOPS = 4;

/** What `send` did for one call (read by the session pool). */
export interface SendTrace {
  attempts: number;
}

/** One forwarded attempt in flight: where it went, and how to fail it early. */
interface Attempt {
  target: PeerId;
  abort(err: unknown): void;
}

/** Requests whose failure may hide a proposal that applies later (reads and registrations have no outcome to hide). */
const HAS_OUTCOME: ReadonlySet<StrongRequest['kind']> = new Set(['write', 'admin']);
/** Requests only a leader serves (any member serves `changes`). */
const NEEDS_LEADER: ReadonlySet<StrongRequest['kind']> = new Set(['write', 'register', 'read', 'admin']);

/** Whether `err` proves its request did nothing (refused before any proposal). */
function isUnsent(err: unknown): boolean {
  return isParleyError(err) && (err.details as { unsent?: unknown }).unsent === true;
}

export class StrongRouter {
  private hint: PeerId | undefined;
  /** Since when this member's Raft view names no leader (undefined while it names one). */
  private leaderlessSinceMs: number | undefined;
  private rotation = 0;
  private closed = false;
  private readonly timers = new Set<Cancel>();
  private readonly attempts = new Set<Attempt>();
  private readonly offs: Array<() => void> = [];
  /** Attempts re-sent after a retryable failure (observability). */
  retries = 0;
  /** Attempts failed early because this member learned of another leader (observability). */
  abandoned = 0;

  constructor(
    private readonly ctx: NodeContext,
    private readonly replica: StrongReplica,
    private readonly options: ResolvedStrongOptions,
    /** Serializable and bounded reads this member answers (`local-read` requests). */
    private readonly local?: LocalReads,
  ) {}

  start(): void {
    this.ctx.transport.handle(STRONG_PROTOCOL, async (_from, bytes) => {
      const req = decodeRequest(bytes);
      return encodeAnswer(await this.serve(req));
    });
    this.offs.push(
      this.ctx.events.on('raft:term', ({ leader }) => {
        if (leader === null) {
          this.leaderlessSinceMs ??= this.ctx.clock.nowMs();
          return;
        }
        this.leaderlessSinceMs = undefined;
        this.learnedLeader(leader);
      }),
    );
  }

  /**
   * The replica has started. A member that has not yet heard of a leader
   * waits for its first election timer (1–2 election timeouts) before it can
   * know there is none: its leaderless stretch counts from two election
   * timeouts from now, never across the node's own startup.
   */
  replicaStarted(): void {
    this.leaderlessSinceMs = this.ctx.clock.nowMs() + 2 * this.electionTimeoutMs;
  }

  /** One election timeout: how long a node may know no leader before its calls fail fast. */
  private get electionTimeoutMs(): number {
    return this.options.tickMs * this.options.electionTimeoutTicks;
  }

  /**
   * This member's Raft view names no leader (itself included) — or, for a learner,
   * names one it has not heard from for an election timeout: a learner never
   * campaigns, so nothing else clears the leader it last knew.
   */
  private noLeaderInView(): boolean {
    if (!this.isMember() || this.replica.isLeader()) return false;
    if (this.replica.leaderHint() === undefined) return true;
    const raft = this.replica.driver.probe;
    return !raft.voters.has(this.ctx.peerId) && raft.electionElapsed >= this.options.electionTimeoutTicks;
  }

  /** This member has known no leader for at least one election timeout. */
  knowsNoLeader(): boolean {
    if (!this.noLeaderInView()) {
      // A learner hears from its leader again without a term event: its next stretch starts afresh.
      if (this.replica.leaderHint() !== undefined) this.leaderlessSinceMs = undefined;
      return false;
    }
    this.leaderlessSinceMs ??= this.ctx.clock.nowMs();
    return this.ctx.clock.nowMs() - this.leaderlessSinceMs >= this.electionTimeoutMs;
  }

  /**
   * This member's Raft view names `leader`: attempts in flight to any other
   * peer will not be answered by a leader, so they fail now with its hint.
   */
  private learnedLeader(leader: PeerId): void {
    for (const a of [...this.attempts]) {
      if (a.target === leader) continue;
      this.abandoned++;
      a.abort(new NotLeaderError(leader));
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ctx.transport.unhandle(STRONG_PROTOCOL);
    for (const off of this.offs.splice(0)) off();
    for (const t of this.timers) t();
    this.timers.clear();
  }

  /** The members this node knows of: its Raft membership, or the configured voters. */
  members(): PeerId[] {
    const st = this.replica.status();
    const known = st.voters.length > 0 ? st.voters : this.options.voters;
    return [...known];
  }

  /** This node is a voter or learner of the group. */
  isMember(): boolean {
    const st = this.replica.status();
    return st.voters.includes(this.ctx.peerId) || st.learners.includes(this.ctx.peerId);
  }

  // ---------------------------------------------------------------- leader side

  /** Serves one request here (this member must lead, except for `changes`). */
  async serve(req: StrongRequest): Promise<Answer> {
    if (this.closed) throw new ClosedError('strong module');
    // A forwarded call this member cannot serve nor pass on: refused, unsent, so its caller may fail fast.
    if (NEEDS_LEADER.has(req.kind) && this.knowsNoLeader()) throw this.leaderlessError();
    switch (req.kind) {
      case 'write':
        return this.indexed(
          await this.bounded(this.replica.submit(req.command, { retry: req.retry === true }), req.timeoutMs),
        );
      case 'register':
        return this.indexed(
          await this.bounded(this.replica.submit({ op: { type: 'register_session' } }), req.timeoutMs),
        );
      case 'read':
        return this.indexed(await this.bounded(this.replica.read(req.command.op), req.timeoutMs));
      case 'local-read': {
        if (!this.local) throw new ClosedError('strong module');
        // Only a member has a state to answer from.
        if (!this.isMember()) throw refused(this.replica.leaderHint());
        const deadlineMs = this.ctx.clock.nowMs() + req.timeoutMs;
        return await this.local.serve(req.command.op, req.consistency, deadlineMs, req.minIndex ?? 0);
      }
      case 'admin':
        if (req.action === 'transferLeadership') await this.transfer(req.peer, req.timeoutMs);
        else await this.replica.changeMembership({ type: req.action, node: req.peer }, req.timeoutMs);
        return { done: true };
      case 'changes': {
        if (!this.isMember()) throw new NotLeaderError(this.replica.leaderHint());
        const filter =
          req.prefix === undefined ? { namespace: req.namespace } : { namespace: req.namespace, prefix: req.prefix };
        return {
          page: {
            changes: this.replica.changes.since(req.fromRevision, filter, req.limit, req.skip ?? 0),
            revision: this.replica.appliedThrough,
          },
        };
      }
    }
  }

  /**
   * A result answered here, with this member's applied index: a write or
   * ReadIndex read answers once applied through its entry or read point, so
   * the index is at or after it, and committed.
   */
  private indexed(result: CommandResult): IndexedResult {
    return { result, index: this.replica.appliedThrough };
  }

  private async transfer(to: PeerId, timeoutMs: number): Promise<void> {
    if (!this.replica.isLeader()) throw new NotLeaderError(this.replica.leaderHint());
    if (to === this.ctx.peerId) return;
    if (!this.replica.status().voters.includes(to)) {
      throw new ParleyError('invalid_argument', `'${to}' is not a voter`, { peer: to });
    }
    this.replica.driver.transferLeader(to);
    const deadline = this.ctx.clock.nowMs() + timeoutMs;
    while (this.replica.leaderHint() !== to || this.replica.isLeader()) {
      if (this.ctx.clock.nowMs() >= deadline) throw new TimeoutError(`leadership did not move to '${to}'`);
      await this.sleep(this.options.tickMs);
    }
  }

  private bounded(pending: Pending<CommandResult>, timeoutMs: number): Promise<CommandResult> {
    const cancel = this.ctx.scheduler.after(Math.max(1, timeoutMs), () =>
      pending.cancel(new TimeoutError(`no answer within ${timeoutMs} ms`)),
    );
    this.timers.add(cancel);
    return pending.promise.finally(() => {
      cancel();
      this.timers.delete(cancel);
    });
  }

  // ---------------------------------------------------------------- caller side

  private pickTarget(): PeerId | undefined {
    if (this.replica.isLeader()) return this.ctx.peerId;
    const lead = this.replica.leaderHint();
    if (lead !== undefined) return lead;
    if (this.hint !== undefined) return this.hint;
    const others = this.members().filter((m) => m !== this.ctx.peerId);
    if (others.length === 0) return this.members().includes(this.ctx.peerId) ? this.ctx.peerId : undefined;
    return others[this.rotation++ % others.length];
  }

  /** Sends one attempt to `target`; fails early if this member learns of another leader. */
  private forward(target: PeerId, payload: Uint8Array, timeoutMs: number, coalesce: boolean): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const attempt: Attempt = {
        target,
        abort: (err) => {
          this.attempts.delete(attempt);
          reject(err);
        },
      };
      this.attempts.add(attempt);
      this.ctx.transport.request(target, STRONG_PROTOCOL, payload, { timeoutMs, coalesce }).then(
        (bytes) => {
          this.attempts.delete(attempt);
          resolve(bytes);
        },
        (err: unknown) => {
          this.attempts.delete(attempt);
          reject(err);
        },
      );
    });
  }

  /**
   * Sends `body` to the leader until it answers or `deadlineMs` (this node's
   * clock) passes. `attemptCapMs` bounds one attempt before it is re-sent.
   * At the deadline: `timeout` if a leader was reached or a write may have
   * been proposed, else `unavailable`; earlier `unavailable` when this node
   * knows there is no leader (the module comment's rule).
   * `trace.attempts` counts the attempts handed to a member (served here or
   * forwarded): with one, the answer is that of the request's only arrival.
   */
  async send(
    body: RequestBody,
    deadlineMs: number,
    attemptCapMs = this.options.attemptTimeoutMs,
    trace?: SendTrace,
    coalesce = false,
  ): Promise<Answer> {
    const hasOutcome = HAS_OUTCOME.has(body.kind);
    const needsLeader = NEEDS_LEADER.has(body.kind);
    let backoffMs = 10;
    let hops = 0;
    let reachedLeader = false;
    let sentWrites = 0;
    /** An attempt was handed to a member and may have been proposed. */
    let maybeProposed = false;
    /** Members that refused this call because they have known no leader for an election timeout. */
    const leaderless = new Set<PeerId>();
    let last: unknown;
    for (;;) {
      if (this.closed) throw new ClosedError('strong module');
      // A member whose Raft log failed has left the group: fail at once with the fault's code.
      if (this.replica.fatal !== undefined) throw faultError(this.replica.fatal);
      const now = this.ctx.clock.nowMs();
      const left = deadlineMs - now;
      const ambiguous = hasOutcome && maybeProposed;
      if (left <= 0) {
        const details = { lastError: isParleyError(last) ? last.code : String(last ?? 'none') };
        if (reachedLeader || ambiguous) throw new TimeoutError('strong call timed out', details);
        throw this.unavailable('no leader of the strong group could be reached', details);
      }
      if (needsLeader && !ambiguous) {
        if (this.knowsNoLeader()) throw this.leaderlessError();
        if (!this.isMember() && leaderless.size > 0 && this.members().every((m) => leaderless.has(m))) {
          throw this.unavailable(`no member of the strong group knows a leader`, {});
        }
      }
      if (needsLeader && this.noLeaderInView()) {
        // No one to send to: wait for an election (or for this member to know there is none).
        await this.sleep(Math.min(2 * this.options.tickMs, left));
        continue;
      }
      const target = this.pickTarget();
      const attemptMs = Math.min(left, attemptCapMs);
      try {
        if (target === undefined) {
          throw new UnavailableError('no member of the strong group is known', { unsent: true });
        }
        if (trace) trace.attempts++;
        // Every attempt after the first of a write says so: the leader sends it through the log.
        const sent = body.kind === 'write' && ++sentWrites > 1 ? { ...body, retry: true } : body;
        if (target === this.ctx.peerId) {
          return await this.serve({ ...sent, timeoutMs: attemptMs } as StrongRequest);
        }
        const waitMs = Math.max(1, attemptMs - NETWORK_MARGIN_MS);
        const bytes = await this.forward(
          target,
          encodeRequest({ ...sent, timeoutMs: waitMs } as StrongRequest),
          attemptMs,
          coalesce,
        );
        return decodeAnswer(body.kind, bytes);
      } catch (err) {
        last = err;
        const unsent = isUnsent(err);
        if (!unsent) maybeProposed = true;
        if (target !== undefined && unsent && (err as ParleyError).details.leaderless === true) leaderless.add(target);
        else if (target !== undefined) leaderless.delete(target);
        if (!isParleyError(err) || !err.retryable) throw err;
        if (err.code === 'timeout') reachedLeader = true;
        this.retries++;
        if (err.code === 'not_leader') {
          const hint = (err.details as { leaderHint?: unknown }).leaderHint;
          this.hint = typeof hint === 'string' && hint !== '' && hint !== target ? hint : undefined;
          if (this.hint !== undefined && ++hops <= MAX_HOPS) continue;
        } else {
          this.hint = undefined;
        }
        hops = 0;
        const jitter = this.ctx.random.int(Math.max(1, backoffMs));
        await this.sleep(Math.min(backoffMs + jitter, Math.max(1, deadlineMs - this.ctx.clock.nowMs())));
        backoffMs = Math.min(backoffMs * 2, 2 * this.options.tickMs);
      }
    }
  }

  /** What a call this member cannot send anywhere fails with (also its answer to a forwarded one). */
  private leaderlessError(): UnavailableError {
    return this.unavailable(`this member has known no leader for ${this.electionTimeoutMs} ms or more`, {
      leaderless: true,
    });
  }

  /** `unavailable` for a call known not to have been proposed: retryable, with the leader hint this node has. */
  private unavailable(message: string, details: Record<string, unknown>): UnavailableError {
    const hint = this.replica.isLeader() ? undefined : (this.replica.leaderHint() ?? this.hint);
    return new UnavailableError(message, {
      ...details,
      unsent: true,
      ...(hint === undefined ? {} : { leaderHint: hint }),
    });
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.ctx.scheduler.after(ms, () => {
        this.timers.delete(cancel);
        resolve();
      });
      this.timers.add(cancel);
    });
  }
}

/** The typed error strong calls (and watches) through a member whose driver stopped fail with. */
export function faultError(fatal: unknown): ParleyError {
  if (isParleyError(fatal)) return fatal;
  return new StorageFailedError('raft', `the Raft driver stopped: ${String((fatal as Error)?.message ?? fatal)}`);
}

function encodeAnswer(a: Answer): Uint8Array {
  if ('result' in a) return encodeIndexedResult(a);
  if ('page' in a) return encodeChanges(a.page);
  return new Uint8Array(0);
}

function decodeAnswer(kind: StrongRequest['kind'], bytes: Uint8Array): Answer {
  if (kind === 'admin') return { done: true };
  if (kind === 'changes') return { page: decodeChanges(bytes) };
  return decodeIndexedResult(bytes);
}
