/**
 * Single-writer ownership of a thread: a fenced Parley lock named after the
 * thread, renewed in the background. While a saver owns a thread, every write
 * it makes to that thread carries the lock's fence, and the strong store
 * refuses it with `fence_stale` once a newer owner was granted the lock — even
 * when this process does not know yet (it was paused past its TTL, or cut off).
 * So two writers never both extend a thread's checkpoint chain.
 */
import { InvalidArgumentError, isParleyError, LeaseLostError, type Unsubscribe } from '@parley/interface';
import type { FenceToken, LockGrant, Locks } from '@parley/node';

export interface OwnThreadOptions {
  /** Who owns the thread (a process or agent name; shown by lock inspection). */
  holder: string;
  /** Seconds the ownership lasts without a renewal, 1..3600 (a lock's bounds). Default 30. */
  ttl?: number;
  /** Whole seconds to wait (0..3600), in the lock's FIFO queue, while another writer owns the thread. Default 0: fail at once with `lock_held`. */
  wait?: number;
  /** Renewal period in ms (default a third of the TTL); `false` renews only on `renew()`. */
  renewEveryMs?: number | false;
}

/** Codes that mean the lock is no longer ours: a newer grant exists, or it lapsed and is gone. */
const LOST_CODES = new Set(['fence_stale', 'key_not_found', 'lease_lost']);

/** One ownership period of a thread. */
export class ThreadLease {
  private grant: LockGrant;
  private lostReason: Error | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly listeners = new Set<(reason: Error) => void>();

  constructor(
    private readonly locks: Locks,
    readonly threadId: string,
    grant: LockGrant,
    private readonly ttl: number,
    renewEveryMs: number | false,
  ) {
    this.grant = grant;
    if (renewEveryMs !== false) {
      this.timer = setInterval(() => {
        this.renew().catch(() => {});
      }, renewEveryMs);
      this.timer.unref?.();
    }
  }

  get holder(): string {
    return this.grant.owner;
  }
  get fence(): number {
    return this.grant.fence;
  }
  /** State-machine time the lock lapses without a renewal. */
  get expiresAt(): number {
    return this.grant.expiresAt;
  }
  /** The fence every write to the thread carries. */
  get token(): FenceToken {
    return { namespace: this.grant.namespace, key: this.grant.key, fence: this.grant.fence };
  }
  get lost(): boolean {
    return this.lostReason !== undefined;
  }

  /** Throws `lease_lost` once this ownership is known to be over. */
  check(): void {
    if (this.lostReason) throw this.lostError();
  }

  lostError(): LeaseLostError {
    return new LeaseLostError(`${this.grant.namespace}/${this.grant.key}`, this.grant.fence, undefined);
  }

  /** Called once when the ownership is found lost (a renewal or a write refused). */
  onLost(callback: (reason: Error) => void): Unsubscribe {
    this.listeners.add(callback);
    return () => this.listeners.delete(callback);
  }

  async renew(): Promise<void> {
    this.check();
    try {
      this.grant = await this.locks.renew(this.grant.key, {
        owner: this.grant.owner,
        fence: this.grant.fence,
        ttl: this.ttl,
      });
    } catch (err) {
      if (isParleyError(err) && LOST_CODES.has(err.code)) this.markLost(err);
      throw err;
    }
  }

  /** Gives the thread up (idempotent); later writes fail with `lease_lost`. */
  async release(): Promise<void> {
    this.stop();
    if (this.lostReason) return;
    this.markLost(this.lostError());
    await this.locks.release(this.grant.key, { owner: this.grant.owner, fence: this.grant.fence });
  }

  /** Records that the store refused this ownership (a write or renewal failed with `fence_stale`, say). */
  markLost(reason: Error): void {
    if (this.lostReason) return;
    this.lostReason = reason;
    this.stop();
    for (const l of this.listeners) {
      try {
        l(reason);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** Stops the background renewal (the lock then lapses after its TTL). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}

export function resolveOwnOptions(o: OwnThreadOptions): {
  holder: string;
  ttl: number;
  wait: number;
  renewEveryMs: number | false;
} {
  if (o === null || typeof o !== 'object' || typeof o.holder !== 'string' || o.holder.length === 0) {
    throw new InvalidArgumentError('ownThread needs a holder (a non-empty string)');
  }
  const ttl = o.ttl ?? 30;
  if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > 3600) {
    throw new InvalidArgumentError('ownThread ttl must be an integer number of seconds in 1..3600');
  }
  const wait = o.wait ?? 0;
  if (!Number.isSafeInteger(wait) || wait < 0 || wait > 3600) {
    throw new InvalidArgumentError('ownThread wait must be an integer number of seconds in 0..3600');
  }
  let renewEveryMs: number | false = Math.max(1, Math.floor((ttl * 1000) / 3));
  if (o.renewEveryMs === false) renewEveryMs = false;
  else if (o.renewEveryMs !== undefined) {
    if (!Number.isSafeInteger(o.renewEveryMs) || o.renewEveryMs < 1) {
      throw new InvalidArgumentError('ownThread renewEveryMs must be a positive integer or false');
    }
    renewEveryMs = o.renewEveryMs;
  }
  return { holder: o.holder, ttl, wait, renewEveryMs };
}
