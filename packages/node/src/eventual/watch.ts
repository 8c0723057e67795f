/**
 * Change fan-out of one namespace: `watch` callbacks filtered by key prefix,
 * and `changes()` async iterators with a bounded queue (an iterator that falls
 * `maxQueued` changes behind fails with `unavailable` rather than grow).
 */
import { UnavailableError, type Unsubscribe } from '@parley/interface';
import type { EventualChange, WatchOptions } from '../api.js';
import type { NodeLogger } from '../context.js';

interface Watcher {
  prefix: string;
  callback: (change: EventualChange) => void;
}

export class ChangeFeed {
  private readonly watchers = new Set<Watcher>();
  private readonly iterators = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly logger: NodeLogger,
    private readonly maxQueued: number,
  ) {}

  get active(): boolean {
    return this.watchers.size > 0;
  }

  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
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
        this.logger.warn({ err: String(err), namespace: change.namespace }, 'eventual: a watch callback threw');
      }
    }
  }

  changes(options: WatchOptions = {}, onFirst?: () => void): AsyncIterable<EventualChange> {
    const feed = this;
    return {
      [Symbol.asyncIterator](): AsyncIterator<EventualChange> {
        onFirst?.();
        const queue: EventualChange[] = [];
        let failure: Error | undefined;
        let done = false;
        let wake: (() => void) | undefined;
        const stop = feed.watch(options, (change) => {
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
}
