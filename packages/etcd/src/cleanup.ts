/**
 * etcd leases used for cleanup only. An entry's deadline lives in its record
 * and decides whether it exists (record.ts); the lease attached to its key
 * merely deletes it some time after that deadline, so etcd does not keep dead
 * entries forever. etcd may extend a lease when its leader changes (etcd
 * issue 9888: the new leader restarts every lease's TTL); here that only
 * delays the cleanup, never the expiry that readers see.
 *
 * Writes share leases: a deadline falls into a bucket (about 1/32 of the time
 * left, between 1 s and 1 h wide), and every write whose deadline lands in
 * the same bucket gets the same lease, which lives until the bucket's end
 * plus a grace period. A cleanup therefore runs at most one bucket plus the
 * grace (plus any leader-change extension) after the deadline.
 */
import { ClosedError } from '@parley/interface';
import type { CallBound, EtcdCalls } from './txn.js';

/** Time a cleanup lease outlives the deadlines it serves. */
export const CLEANUP_GRACE_MS = 2_000;
/** Cached buckets; the oldest is dropped past it. */
const MAX_BUCKETS = 4096;

interface Bucket {
  endMs: number;
  lease: Promise<string>;
}

export class CleanupLeases {
  private readonly buckets = new Map<number, Bucket>();
  /** Leases granted (observability, tests). */
  granted = 0;

  constructor(private readonly calls: EtcdCalls) {}

  /** The id of a lease that lives until at least `untilMs` (backend clock) plus the grace. */
  leaseUntil(untilMs: number, bound: CallBound): Promise<string> {
    if (this.calls.isClosed) return Promise.reject(new ClosedError('etcd backend'));
    const now = this.calls.clock.nowMs();
    const left = Math.max(0, untilMs - now);
    const width = Math.min(3_600_000, Math.max(1_000, 2 ** Math.ceil(Math.log2(Math.max(1, left / 32)))));
    const endMs = Math.ceil((untilMs + CLEANUP_GRACE_MS) / width) * width;
    const cached = this.buckets.get(endMs);
    if (cached) return cached.lease;
    this.prune(now);
    const ttlSeconds = Math.max(2, Math.ceil((endMs - now) / 1000) + 1);
    const lease = this.calls
      .run('lease grant', bound, (o) => this.calls.client.leaseClient.leaseGrant({ TTL: ttlSeconds, ID: 0 }, o))
      .then((r) => {
        this.granted++;
        return r.ID;
      });
    const bucket: Bucket = { endMs, lease };
    this.buckets.set(endMs, bucket);
    lease.catch(() => {
      if (this.buckets.get(endMs) === bucket) this.buckets.delete(endMs);
    });
    return lease;
  }

  /** Forgets every cached lease (a put failed with "requested lease not found": etcd lost or expired one). */
  forgetAll(): void {
    this.buckets.clear();
  }

  private prune(now: number): void {
    for (const [end] of this.buckets) if (end <= now + CLEANUP_GRACE_MS) this.buckets.delete(end);
    while (this.buckets.size >= MAX_BUCKETS) {
      const oldest = Math.min(...this.buckets.keys());
      this.buckets.delete(oldest);
    }
  }
}
