/**
 * Change reports of one browser namespace: `watch` callbacks by key prefix,
 * and `expire` reports at an entry's expiry while anyone watches (one timer,
 * at the earliest expiry of the entries watchers have seen live).
 */
import type { Entry, NamespaceReplica } from '@parley/crdt';
import { freezeEntry } from './entry.js';
import type { EventualChange, Unsubscribe, WatchOptions } from './types.js';

interface Watcher {
  prefix: string;
  callback: (change: EventualChange) => void;
}

export class Feed {
  private readonly watchers = new Set<Watcher>();
  /** Live entries' expiry instants, kept while anyone watches. */
  private readonly expiries = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(
    private readonly namespace: string,
    private readonly replica: () => NamespaceReplica,
    private readonly now: () => number,
  ) {}

  get active(): boolean {
    return this.watchers.size > 0;
  }

  watch(options: WatchOptions, callback: (change: EventualChange) => void): Unsubscribe {
    const w: Watcher = { prefix: options?.prefix ?? '', callback };
    this.watchers.add(w);
    if (this.watchers.size === 1) this.track();
    return () => {
      this.watchers.delete(w);
      if (this.watchers.size === 0) this.disarm();
    };
  }

  /** Tracks the expiry of every live entry (when the first watcher arrives, and once the replica is restored). */
  track(): void {
    const replica = this.replica() as NamespaceReplica | undefined;
    if (!this.active || replica === undefined) return;
    for (const [key, e] of replica.entries(this.now())) this.expiries.set(key, e.expiresAt);
    this.arm();
  }

  /** Reports what a change of `key` did, given whether it was live before. */
  report(key: string, wasLive: boolean, origin: string): void {
    if (!this.active) return;
    const e: Entry | undefined = this.replica().get(key, this.now());
    if (e) {
      this.expiries.set(key, e.expiresAt);
      this.emit({ namespace: this.namespace, key, type: 'set', entry: freezeEntry(this.namespace, key, e), origin });
      this.arm();
    } else {
      this.expiries.delete(key);
      const state = this.replica().stateOf(key);
      if (wasLive)
        this.emit({ namespace: this.namespace, key, type: state?.type === 'tombstone' ? 'delete' : 'expire', origin });
    }
  }

  private emit(change: EventualChange): void {
    for (const w of [...this.watchers]) {
      if (!change.key.startsWith(w.prefix)) continue;
      try {
        w.callback(change);
      } catch (err) {
        console.warn('parley: a watch callback threw', err);
      }
    }
  }

  private arm(): void {
    if (this.closed || this.watchers.size === 0) return;
    let next = Number.POSITIVE_INFINITY;
    for (const at of this.expiries.values()) if (at < next) next = at;
    if (next >= this.timerAt) return;
    this.disarm();
    if (next === Number.POSITIVE_INFINITY) return;
    this.timerAt = next;
    // setTimeout holds at most 2^31 - 1 ms; a later expiry re-arms on firing.
    this.timer = setTimeout(() => this.fire(), Math.min(2 ** 31 - 1, Math.max(0, next - this.now())));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.now();
    for (const [key, at] of [...this.expiries]) {
      if (at > now) continue;
      this.expiries.delete(key);
      if (this.replica().get(key, now) === undefined)
        this.emit({ namespace: this.namespace, key, type: 'expire', origin: 'local' });
    }
    this.arm();
  }

  close(): void {
    this.closed = true;
    this.disarm();
    this.watchers.clear();
    this.expiries.clear();
  }
}
