/**
 * The peers known to replicate one namespace, which 'majority' operations
 * count. A peer is known once it sent this node gossip, a request or an
 * anti-entropy reply for the namespace (over the cluster's authenticated
 * connections, but nothing vouches that it keeps replicating), so the set is
 * bounded and ages: a peer not heard from for `replicaTtlMs` is forgotten,
 * and when the set is full the one heard from longest ago makes room.
 * Persisted in the namespace's meta as `[peer, lastHeardMs]` pairs, written
 * when a peer is added or every tenth of the TTL, not at every message.
 */
import type { PeerId } from '@parley/interface';

/** Largest set of remembered replicas per namespace. */
export const MAX_KNOWN_REPLICAS = 1024;

export class KnownReplicas {
  /** Peer → last heard (physical ms); iteration order is insertion order, not recency. */
  private readonly seen = new Map<PeerId, number>();
  /** When the set was last written to the meta. */
  private persistedAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly self: PeerId,
    private readonly ttlMs: number,
    private readonly max = MAX_KNOWN_REPLICAS,
  ) {}

  /** Adopts the persisted pairs (an old meta's bare peer ids count as heard at `nowMs`). */
  load(stored: ReadonlyArray<readonly [string, number] | string> | undefined, nowMs: number): void {
    this.seen.clear();
    for (const item of stored ?? []) {
      const [peer, at] = typeof item === 'string' ? [item, nowMs] : item;
      if (typeof peer !== 'string' || peer === this.self || !Number.isSafeInteger(at)) continue;
      this.seen.set(peer, Math.max(this.seen.get(peer) ?? 0, at));
    }
    this.expire(nowMs);
    while (this.seen.size > this.max) this.evictOldest();
    this.persistedAtMs = nowMs;
  }

  /**
   * Records that `peer` was heard from. Returns 'new' for a peer not known
   * (persist now), 'refresh' when the last write is a tenth of the TTL old
   * (persist now), else undefined.
   */
  heard(peer: PeerId, nowMs: number): 'new' | 'refresh' | undefined {
    if (peer === this.self) return undefined;
    const isNew = !this.seen.has(peer);
    if (isNew && this.seen.size >= this.max) {
      this.expire(nowMs);
      if (this.seen.size >= this.max) this.evictOldest();
    }
    this.seen.set(peer, Math.max(this.seen.get(peer) ?? 0, nowMs));
    const stale = nowMs - this.persistedAtMs >= Math.max(1, Math.floor(this.ttlMs / 10));
    if (!isNew && !stale) return undefined;
    this.persistedAtMs = nowMs;
    return isNew ? 'new' : 'refresh';
  }

  /** The peers heard from within the TTL, sorted. */
  list(nowMs: number): PeerId[] {
    this.expire(nowMs);
    return [...this.seen.keys()].sort();
  }

  /** Whether some replica heard from at or after `sinceMs` is not in `connected`. */
  anyUnconnectedSince(connected: ReadonlySet<PeerId>, sinceMs: number): boolean {
    for (const [peer, at] of this.seen) if (at >= sinceMs && !connected.has(peer)) return true;
    return false;
  }

  /** The pairs to persist. */
  toJSON(): Array<[PeerId, number]> {
    return [...this.seen].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  }

  private expire(nowMs: number): void {
    for (const [peer, at] of this.seen) if (nowMs - at > this.ttlMs) this.seen.delete(peer);
  }

  private evictOldest(): void {
    let oldest: PeerId | undefined;
    let at = Number.POSITIVE_INFINITY;
    for (const [peer, t] of this.seen) {
      if (t < at) {
        at = t;
        oldest = peer;
      }
    }
    if (oldest !== undefined) this.seen.delete(oldest);
  }
}
