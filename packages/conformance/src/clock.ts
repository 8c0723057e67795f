/**
 * A clock a test moves forward: the system clock plus an offset. Both
 * backends read deadlines from the node's clock (the Raft leader stamps its
 * commands with it; the etcd backend stores each entry's deadline in its
 * value), so jumping it forward lets a TTL run out without waiting for it.
 * It never goes back.
 */
import type { Clock } from '@parley/interface';

export class JumpClock implements Clock {
  private offsetMs = 0;

  nowMs(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves the clock forward by `ms` (≥ 0). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('a JumpClock only moves forward');
    this.offsetMs += ms;
  }
}
