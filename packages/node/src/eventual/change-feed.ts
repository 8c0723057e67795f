/**
 * Change fan-out of one namespace: `watch` callbacks filtered by key prefix,
 * and `changes()` async iterators with a bounded queue (an iterator that falls
 * `maxQueued` changes behind fails with `unavailable` rather than grow).
 *
 * Expiry reports: while anyone watches, the feed keeps an ExpiryQueue of the
 * live entries' deadlines and one timer at the earliest, so an entry reaching
 * its expiry is reported once, as `expire`, at its time. Nothing of it runs
 * while nobody watches (the queue is rebuilt from the replica when the first
 * watcher arrives).
 */
import { expiresAtOf, type NamespaceReplica } from '@parley/crdt';
import { type Cancel, type PeerId, UnavailableError, type Unsubscribe } from '@parley/interface';
import type { EventualChange, WatchOptions } from '../api.js';
import type { NodeContext } from '../context.js';
import { toEventualEntry } from './entry.js';
import { ExpiryQueue } from './expiry-queue.js';

/** What the feed reads of its namespace: the current replica, and when it is open. */
export interface FeedSource {
  readonly name: string;
  replica(): NamespaceReplica;
  ready(): Promise<void>;
}

interface Watcher {
  prefix: string;
  callback: (change: EventualChange) => void;
}

export class ChangeFeed {
  private readonly watchers = new Set<Watcher>();
  private readonly iterators = new Set<() => void>();
  private closed = false;
  private readonly expiry = new ExpiryQueue();
  private expiryTimer: Cancel | undefined;
  private expiryTimerAt = Number.POSITIVE_INFINITY;
  /** Set when the namespace starts closing: no expiry timer is armed after it. */
  private expiryStopped = false;

  constructor(
    private readonly ctx: Pick<NodeContext, 'logger' | 'scheduler' | 'clock'>,
    private readonly source: FeedSource,
    private readonly maxQueued: number,
  ) {}

  get active(): boolean {
    return this.watchers.size > 0;
  }

  /** Adds a watcher (starting expiry tracking if it is the first). */
  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
    this.startExpiryTracking();
    return this.addWatcher(options, callback);
  }

  private addWatcher(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
    const w: Watcher = { prefix: options?.prefix ?? '', callback };
    this.watchers.add(w);
    return () => {
      this.watchers.delete(w);
    };
  }

  /** Ends every `changes()` iterator and drops every watcher. */
  close(): void {
    this.closed = true;
    for (const end of [...this.iterators]) end();
    this.watchers.clear();
  }

  emit(change: EventualChange): void {
    for (const w of this.watchers) {
      if (!change.key.startsWith(w.prefix)) continue;
      try {
        w.callback(change);
      } catch (err) {
        this.ctx.logger.warn({ err: String(err), namespace: change.namespace }, 'eventual: a watch callback threw');
      }
    }
  }

  changes(options: WatchOptions = {}): AsyncIterable<EventualChange> {
    const feed = this;
    return {
      [Symbol.asyncIterator](): AsyncIterator<EventualChange> {
        feed.startExpiryTracking();
        const queue: EventualChange[] = [];
        let failure: Error | undefined;
        let done = false;
        let wake: (() => void) | undefined;
        const stop = feed.addWatcher(options, (change) => {
          if (done) return;
          if (queue.length >= feed.maxQueued) {
            failure = new UnavailableError(`changes() fell ${feed.maxQueued} changes behind; resubscribe`, {
              namespace: change.namespace,
            });
            stop();
          } else queue.push(change);
          wake?.();
        });
        const finish = (): IteratorResult<EventualChange> => {
          done = true;
          stop();
          feed.iterators.delete(end);
          return { done: true, value: undefined };
        };
        const end = () => {
          finish();
          wake?.();
        };
        feed.iterators.add(end);
        if (feed.closed) end();
        return {
          async next(): Promise<IteratorResult<EventualChange>> {
            for (;;) {
              const c = queue.shift();
              if (c) return { done: false, value: c };
              if (failure) {
                finish();
                throw failure;
              }
              if (done) return { done: true, value: undefined };
              await new Promise<void>((resolve) => {
                wake = resolve;
              });
              wake = undefined;
            }
          },
          async return(): Promise<IteratorResult<EventualChange>> {
            queue.length = 0;
            const r = finish();
            wake?.();
            return r;
          },
        };
      },
    };
  }

  // ---------------------------------------------------------------- reports

  /** Called for a key whose state may have changed; `wasLive` is whether it read as present before. */
  report(key: string, wasLive: boolean, now: number, origin: 'local' | PeerId): void {
    if (!this.active) return;
    const replica = this.source.replica();
    const e = replica.get(key, now);
    if (e) {
      this.expiry.push(e.expiresAt, key);
      this.armExpiry();
      this.emit({
        namespace: this.source.name,
        key,
        type: 'set',
        entry: toEventualEntry(this.source.name, key, e),
        origin,
      });
    } else if (wasLive) {
      const state = replica.stateOf(key);
      const type = state?.type === 'tombstone' ? 'delete' : 'expire';
      this.emit({ namespace: this.source.name, key, type, origin });
    }
  }

  // ---------------------------------------------------------------- expiry timer

  /** Cancels the expiry timer for good (the namespace is closing). */
  stopExpiry(): void {
    this.expiryStopped = true;
    this.expiryTimer?.();
  }

  private startExpiryTracking(): void {
    if (this.active) return;
    // Rebuild the expiry queue from scratch: it is kept only while someone watches.
    this.expiry.rebuild(() => false);
    this.source.ready().then(
      () => {
        const now = this.ctx.clock.nowMs();
        for (const [key, e] of this.source.replica().entries(now)) this.expiry.push(e.expiresAt, key);
        this.armExpiry();
      },
      () => {},
    );
  }

  private armExpiry(): void {
    const at = this.expiry.peekTime();
    if (at === undefined || this.expiryStopped || at >= this.expiryTimerAt) return;
    this.expiryTimer?.();
    this.expiryTimerAt = at;
    this.expiryTimer = this.ctx.scheduler.after(Math.max(0, at - this.ctx.clock.nowMs()), () => this.fireExpiry());
  }

  private fireExpiry(): void {
    this.expiryTimer = undefined;
    this.expiryTimerAt = Number.POSITIVE_INFINITY;
    if (this.expiryStopped) return;
    if (!this.active) {
      this.expiry.rebuild(() => false);
      return;
    }
    const now = this.ctx.clock.nowMs();
    const replica = this.source.replica();
    for (let t = this.expiry.peekTime(); t !== undefined && t <= now; t = this.expiry.peekTime()) {
      const [at, key] = this.expiry.pop() as [number, string];
      const state = replica.stateOf(key);
      if (state && state.type !== 'tombstone' && expiresAtOf(state) === at) {
        this.emit({ namespace: this.source.name, key, type: 'expire', origin: 'local' });
      }
    }
    if (this.expiry.size > 2 * replica.stats().states + 1024) {
      this.expiry.rebuild((at, key) => {
        const s = replica.stateOf(key);
        return s !== undefined && s.type !== 'tombstone' && expiresAtOf(s) === at;
      });
    }
    this.armExpiry();
  }
}
