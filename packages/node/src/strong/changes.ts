/**
 * The change feed of strong namespaces: every applied write that changes an
 * entry becomes a StrongChange numbered by its Raft log index (its revision),
 * kept in a bounded ring so a watcher can resume after a revision it saw.
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

export class ChangeLog {
  private ring: StrongChange[] = [];
  /** Changes at revisions ≤ this are no longer kept (or were never seen: a snapshot replaced them). */
  private floorRevision = 0;
  private readonly listeners = new Set<(c: StrongChange) => void>();

  constructor(private readonly maxChanges: number) {}

  get oldestRevision(): number {
    return this.floorRevision;
  }

  push(change: StrongChange): void {
    this.ring.push(change);
    if (this.ring.length > this.maxChanges) {
      const drop = this.ring.length - this.maxChanges;
      this.floorRevision = (this.ring[drop - 1] as StrongChange).revision;
      this.ring = this.ring.slice(drop);
    }
    for (const l of [...this.listeners]) l(change);
  }

  /** A snapshot replaced the state up to `revision`: changes before it cannot be replayed. */
  resetTo(revision: number): void {
    this.ring = this.ring.filter((c) => c.revision > revision);
    this.floorRevision = Math.max(this.floorRevision, revision);
  }

  /**
   * Changes after `fromRevision` that match, oldest first, at most `limit`.
   * Throws `compacted` when changes after `fromRevision` are no longer kept.
   */
  since(fromRevision: number, filter: ChangeFilter, limit: number): StrongChange[] {
    if (fromRevision < this.floorRevision) {
      throw new ParleyError('compacted', `changes after revision ${fromRevision} are no longer kept`, {
        index: fromRevision,
        firstIndex: this.floorRevision + 1,
      });
    }
    const out: StrongChange[] = [];
    for (const c of this.ring) {
      if (c.revision <= fromRevision || !matches(filter, c)) continue;
      out.push(c);
      if (out.length >= limit) break;
    }
    return out;
  }

  subscribe(listener: (c: StrongChange) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
