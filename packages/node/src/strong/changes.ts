/**
 * The change feed of strong namespaces: every applied write that changes an
 * entry becomes a StrongChange numbered by its Raft log index (its revision),
 * kept in a bounded ring (at least the last `maxWatchHistory` changes, at
 * most an eighth more) so a watcher can resume after a revision it saw.
 * One command may change many entries (a deleteNamespace): its changes share
 * a revision and keep the order they were applied in, the same on every
 * member, so "the first n matching changes of revision r" names the same
 * changes wherever it is asked.
 */
import { ParleyError, type Unsubscribe } from '@parley/interface';
import type { StrongChange } from '../api.js';

export interface ChangeFilter {
  namespace: string;
  prefix?: string;
}

export function matches(filter: ChangeFilter, c: StrongChange): boolean {
  return c.namespace === filter.namespace && (filter.prefix === undefined || c.key.startsWith(filter.prefix));
}

/** Notified when this member's state jumped to `revision` by a snapshot: the changes before it were never seen here. */
export type GapListener = (revision: number) => void;

export class ChangeLog {
  private ring: StrongChange[] = [];
  /** Changes at revisions ≤ this are no longer kept (or were never seen: a snapshot replaced them). */
  private floorRevision = 0;
  private readonly listeners = new Set<(c: StrongChange) => void>();
  private readonly gapListeners = new Set<GapListener>();

  constructor(private readonly maxChanges: number) {}

  get oldestRevision(): number {
    return this.floorRevision;
  }

  push(change: StrongChange): void {
    this.ring.push(change);
    // Trimmed in steps of an eighth, not on every push: a 10,000-key deleteNamespace must not copy the ring 10,000 times.
    if (this.ring.length > this.maxChanges + Math.max(1, this.maxChanges >> 3)) {
      const drop = this.ring.length - this.maxChanges;
      // Dropping part of a revision drops all of it from what can be replayed: the floor is that revision.
      this.floorRevision = (this.ring[drop - 1] as StrongChange).revision;
      this.ring = this.ring.slice(drop);
    }
    for (const l of [...this.listeners]) l(change);
  }

  /** A snapshot replaced the state up to `revision`: changes before it cannot be replayed, and followers are told. */
  resetTo(revision: number): void {
    this.ring = this.ring.filter((c) => c.revision > revision);
    this.floorRevision = Math.max(this.floorRevision, revision);
    for (const l of [...this.gapListeners]) l(revision);
  }

  /**
   * Changes after `fromRevision` that match, oldest first, at most `limit`,
   * leaving out the first `skip` matching changes of revision
   * `fromRevision + 1` (a reader that stopped inside that revision). Throws
   * `compacted` when changes after `fromRevision` are no longer kept.
   */
  since(fromRevision: number, filter: ChangeFilter, limit: number, skip = 0): StrongChange[] {
    if (fromRevision < this.floorRevision) {
      throw new ParleyError('compacted', `changes after revision ${fromRevision} are no longer kept`, {
        index: fromRevision,
        firstIndex: this.floorRevision + 1,
      });
    }
    const out: StrongChange[] = [];
    let skipped = 0;
    for (const c of this.ring) {
      if (c.revision <= fromRevision || !matches(filter, c)) continue;
      if (c.revision === fromRevision + 1 && skipped < skip) {
        skipped++;
        continue;
      }
      out.push(c);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Calls `listener` with every change pushed from now on, and `onGap` when a snapshot replaces the state. */
  subscribe(listener: (c: StrongChange) => void, onGap?: GapListener): Unsubscribe {
    this.listeners.add(listener);
    if (onGap) this.gapListeners.add(onGap);
    return () => {
      this.listeners.delete(listener);
      if (onGap) this.gapListeners.delete(onGap);
    };
  }
}
