/**
 * Watches on strong namespaces. On a member of the group the change feed is
 * its own applied log (in log order, after apply); elsewhere the node polls
 * a member for the changes after the last revision it delivered. Either way
 * a watcher sees each change once, in revision order, and may resume with
 * `fromRevision`.
 */
import { isParleyError, type Unsubscribe } from '@parley/interface';
import type { StrongChange } from '../api.js';
import type { NodeContext } from '../context.js';
import { type ChangeFilter, matches } from './changes.js';
import type { ResolvedStrongOptions } from './options.js';
import type { StrongReplica } from './replica.js';
import type { StrongRouter } from './router.js';
import { MAX_CHANGES_PER_PAGE } from './wire.js';

/** How often a node outside the group polls for changes. */
export const WATCH_POLL_MS = 250;

export class Watches {
  private readonly active = new Set<() => void>();

  constructor(
    private readonly ctx: NodeContext,
    private readonly replica: StrongReplica,
    private readonly router: StrongRouter,
    private readonly options: ResolvedStrongOptions,
  ) {}

  close(): void {
    for (const stop of [...this.active]) stop();
  }

  private isMember(): boolean {
    const st = this.replica.status();
    return st.voters.includes(this.ctx.peerId) || st.learners.includes(this.ctx.peerId);
  }

  /** Follows the changes matching `filter` after `from` (validated by the caller), or from now on. */
  watch(filter: ChangeFilter, from: number | undefined, callback: (change: StrongChange) => void): Unsubscribe {
    const stop = this.isMember() ? this.local(filter, from, callback) : this.remote(filter, from, callback);
    this.active.add(stop);
    return () => {
      this.active.delete(stop);
      stop();
    };
  }

  private local(filter: ChangeFilter, from: number | undefined, callback: (c: StrongChange) => void): () => void {
    // Several changes may share a revision (a deleteNamespace removes many keys in one
    // command): each change reaches the feed once, so only the resume point filters.
    const floor = from ?? this.replica.appliedThrough;
    const deliver = (c: StrongChange) => {
      if (c.revision <= floor || !matches(filter, c)) return;
      callback(c);
    };
    // Replay what is kept after `from` (throws `compacted` when it is no longer kept), then follow.
    if (from !== undefined) {
      for (const c of this.replica.changes.since(floor, filter, Number.MAX_SAFE_INTEGER)) deliver(c);
    }
    return this.replica.changes.subscribe(deliver);
  }

  private remote(filter: ChangeFilter, from: number | undefined, callback: (c: StrongChange) => void): () => void {
    let stopped = false;
    let last = from;
    let cancel: (() => void) | undefined;
    const poll = async () => {
      if (stopped) return;
      try {
        const answer = await this.router.send(
          {
            kind: 'changes',
            fromRevision: last ?? Number.MAX_SAFE_INTEGER,
            namespace: filter.namespace,
            prefix: filter.prefix,
            limit: MAX_CHANGES_PER_PAGE,
          },
          this.ctx.clock.nowMs() + this.options.callTimeoutMs,
        );
        if ('page' in answer && !stopped) {
          if (last === undefined) last = answer.page.revision;
          for (const c of answer.page.changes) {
            if (stopped || c.revision <= (last ?? 0)) continue;
            last = c.revision;
            callback(c);
          }
        }
      } catch (err) {
        if (isParleyError(err, 'compacted')) {
          this.ctx.logger.warn(
            { namespace: filter.namespace, fromRevision: last },
            'strong watch: changes compacted, resuming at the head',
          );
          last = undefined;
        }
      }
      if (!stopped) cancel = this.ctx.scheduler.after(WATCH_POLL_MS, () => void poll());
    };
    void poll();
    return () => {
      stopped = true;
      cancel?.();
    };
  }
}
