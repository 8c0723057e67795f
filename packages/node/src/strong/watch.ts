/**
 * Watches on strong namespaces. A watcher keeps its point in the sequence of
 * matching changes — every change through revision `after`, and the first
 * `seen` changes of revision `after + 1` (a deleteNamespace puts up to 1,000
 * changes at one revision) — and follows it from one of two sources:
 *
 * - local: on a member of the group, its own applied changes, in log order,
 *   as they apply;
 * - polled: on a node outside the group, and on a member whose state a
 *   snapshot moved forward past changes it never applied, pages of changes
 *   from a member (the leader) after the point, every WATCH_POLL_MS (at once
 *   while pages come back full). A member goes back to its own changes once
 *   its history reaches the point again.
 *
 * Either way a watcher sees each change once, in revision order, and never
 * skips one: when the changes after its point are no longer kept where it
 * asks, the watch ends with `compacted` (its `onError`, else a warning).
 *
 * A member whose Raft driver stopped (a full disk, a failed log) applies
 * nothing more, so it could deliver nothing more: every watch on it ends then
 * with the fault's typed error (`storage_full`, …, as its calls fail), and a
 * new watch on it is refused with that error. The reader resumes elsewhere
 * from its last revision.
 */
import { isParleyError, ParleyError, type Unsubscribe } from '@parley/interface';
import type { StrongChange } from '../api.js';
import type { NodeContext } from '../context.js';
import { type ChangeFilter, matches } from './changes.js';
import type { ResolvedStrongOptions } from './options.js';
import type { StrongReplica } from './replica.js';
import { faultError, type StrongRouter } from './router.js';

/** How often a node outside the group polls for changes. */
export const WATCH_POLL_MS = 250;

type OnError = (err: ParleyError) => void;

export class Watches {
  private readonly active = new Set<Watcher>();
  private readonly offFault: () => void;

  constructor(
    private readonly ctx: NodeContext,
    private readonly replica: StrongReplica,
    private readonly router: StrongRouter,
    private readonly options: ResolvedStrongOptions,
  ) {
    this.offFault = replica.onFault((fatal) => {
      const err = faultError(fatal);
      for (const w of [...this.active]) w.fail(err);
    });
  }

  close(): void {
    this.offFault();
    for (const w of [...this.active]) w.stop();
    this.active.clear();
  }

  isMember(): boolean {
    const st = this.replica.status();
    return st.voters.includes(this.ctx.peerId) || st.learners.includes(this.ctx.peerId);
  }

  /**
   * Follows the changes matching `filter` after `from` (validated by the
   * caller), or from now on. On a member a resume point its history no
   * longer keeps throws `compacted` at once.
   */
  watch(
    filter: ChangeFilter,
    from: number | undefined,
    callback: (change: StrongChange) => void,
    onError?: OnError,
  ): Unsubscribe {
    // Out of service: it will apply nothing more, so it cannot follow anything.
    if (this.replica.fatal !== undefined) throw faultError(this.replica.fatal);
    const w: Watcher = new Watcher(this, filter, callback, (err) => {
      this.active.delete(w);
      if (onError) onError(err);
      else this.ctx.logger.warn({ namespace: filter.namespace, err: err.message }, 'strong watch ended');
    });
    w.start(from);
    this.active.add(w);
    return () => {
      this.active.delete(w);
      w.stop();
    };
  }

  /** @internal */
  get parts(): { ctx: NodeContext; replica: StrongReplica; router: StrongRouter; options: ResolvedStrongOptions } {
    return { ctx: this.ctx, replica: this.replica, router: this.router, options: this.options };
  }
}

class Watcher {
  /** Every matching change at revisions ≤ after was delivered, and the first `seen` of revision after + 1. */
  private after = 0;
  private seen = 0;
  /** The revision and index (among matching changes of that revision) of the next change the source hands over. */
  private sourceRevision = 0;
  private sourceIndex = 0;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private cancelPoll: (() => void) | undefined;
  private polling = false;

  constructor(
    private readonly watches: Watches,
    private readonly filter: ChangeFilter,
    private readonly callback: (change: StrongChange) => void,
    private readonly onEnd: OnError,
  ) {}

  start(from: number | undefined): void {
    const { replica } = this.watches.parts;
    if (this.watches.isMember()) {
      this.after = from ?? replica.appliedThrough;
      // Throws `compacted` here when this member no longer keeps the changes after `from`.
      this.followLocal(from !== undefined);
    } else {
      if (from !== undefined) this.after = from;
      this.poll(from === undefined);
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.cancelPoll?.();
    this.cancelPoll = undefined;
  }

  /** Ends the watch with `err` (its `onError`). */
  fail(err: ParleyError): void {
    if (this.stopped) return;
    this.stop();
    this.onEnd(err);
  }

  /** Hands over one change of the current source, unless the watcher already has it. */
  private offer(c: StrongChange): void {
    if (this.stopped || !matches(this.filter, c)) return;
    if (c.revision !== this.sourceRevision) {
      this.sourceRevision = c.revision;
      this.sourceIndex = 0;
    }
    const index = this.sourceIndex++;
    if (c.revision <= this.after) return;
    if (c.revision === this.after + 1) {
      if (index < this.seen) return;
      this.seen = index + 1;
    } else {
      this.after = c.revision - 1;
      this.seen = index + 1;
    }
    try {
      this.callback(c);
    } catch (err) {
      // The callback runs inside this member's apply: its failure must not reach Raft.
      this.watches.parts.ctx.logger.warn(
        { namespace: c.namespace, err: String(err) },
        'strong watch: a callback threw',
      );
    }
  }

  /** Every matching change through `revision` was delivered (a source said it has no more). */
  private completeThrough(revision: number): void {
    if (revision > this.after) {
      this.after = revision;
      this.seen = 0;
    }
  }

  /** Replays what this member keeps after the point (when asked), then follows its applied changes. */
  private followLocal(replay: boolean): void {
    const { replica } = this.watches.parts;
    this.sourceRevision = 0;
    if (replay || this.after < replica.appliedThrough) {
      for (const c of replica.changes.since(this.after, this.filter, Number.MAX_SAFE_INTEGER)) this.offer(c);
    }
    this.completeThrough(replica.appliedThrough);
    this.unsubscribe = replica.changes.subscribe(
      (c) => this.offer(c),
      // A snapshot moved this member past changes it never applied: fetch them from a member that has them.
      () => {
        this.unsubscribe?.();
        this.unsubscribe = undefined;
        this.schedulePoll(0);
      },
    );
  }

  /** Back to this member's own changes once its history covers the point again. */
  private maybeLocal(): boolean {
    const { replica } = this.watches.parts;
    if (!this.watches.isMember() || this.after < replica.changes.oldestRevision) return false;
    // Changes this member applies later that the watcher already has (the leader was ahead) are left out by `offer`.
    this.followLocal(true);
    return true;
  }

  private schedulePoll(ms: number): void {
    if (this.stopped) return;
    this.cancelPoll = this.watches.parts.ctx.scheduler.after(ms, () => void this.poll(false));
  }

  private async poll(fromNow: boolean): Promise<void> {
    if (this.stopped || this.polling) return;
    if (!fromNow && this.maybeLocal()) return;
    this.polling = true;
    const { ctx, router, options } = this.watches.parts;
    let full = false;
    try {
      const answer = await router.send(
        {
          kind: 'changes',
          fromRevision: fromNow ? Number.MAX_SAFE_INTEGER : this.after,
          namespace: this.filter.namespace,
          prefix: this.filter.prefix,
          limit: options.watchPageChanges,
          ...(fromNow || this.seen === 0 ? {} : { skip: this.seen }),
        },
        ctx.clock.nowMs() + options.callTimeoutMs,
      );
      if ('page' in answer && !this.stopped) {
        const { changes, revision } = answer.page;
        if (fromNow) {
          this.after = revision;
          this.seen = 0;
        } else {
          // The page starts after the point: its first changes at after + 1 come after the `seen` ones.
          this.sourceRevision = this.after + 1;
          this.sourceIndex = this.seen;
          for (const c of changes) this.offer(c);
          full = changes.length >= options.watchPageChanges;
          if (!full) this.completeThrough(revision);
        }
        fromNow = false;
      }
    } catch (err) {
      if (isParleyError(err, 'compacted')) {
        this.fail(
          new ParleyError(
            'compacted',
            `changes after revision ${this.after} are no longer kept: watch again, then list`,
            {
              ...(err as ParleyError).details,
              index: this.after,
            },
          ),
        );
      }
      // Anything else (no leader, timeout, a member restarting): ask again at the next poll.
    } finally {
      this.polling = false;
    }
    if (this.stopped) return;
    if (fromNow) this.cancelPoll = ctx.scheduler.after(WATCH_POLL_MS, () => void this.poll(true));
    else this.schedulePoll(full ? 0 : WATCH_POLL_MS);
  }
}
