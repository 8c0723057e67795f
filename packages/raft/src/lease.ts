import { InvalidArgumentError, type PeerId } from '@parley/interface';
import type { Progress } from './progress.js';

/**
 * Lease-read bookkeeping of a leader: which of its ticks an acknowledgement
 * proves a peer heard from it, and whether a quorum did so recently enough.
 */

/** The leader's last index when its tick count reached `tick`: later entries were appended at `tick` or after. */
interface AppendMark {
  tick: number;
  lastIndex: number;
}

/**
 * Lease length in the leader's ticks for an election timeout and a drift
 * margin (see RaftConfig.leaseDriftMarginTicks); throws on a margin out of range.
 */
export function leaseTicksFor(electionTimeout: number, margin: number): number {
  if (!Number.isInteger(margin) || margin < 0 || margin > electionTimeout - 2) {
    throw new InvalidArgumentError('raft: need 0 ≤ leaseDriftMarginTicks ≤ electionTimeoutTicks - 2', {
      leaseDriftMarginTicks: margin,
    });
  }
  return electionTimeout - 1 - margin;
}

/** Leader: marks of the last lease's worth of ticks, oldest first (see `appendTick`). */
export class AppendMarks {
  private marks: AppendMark[] = [];

  clear(): void {
    this.marks = [];
  }

  /** Starts a leadership at `tick` with `lastIndex` as its last entry. */
  start(tick: number, lastIndex: number): void {
    this.marks = [{ tick, lastIndex }];
  }

  /** Records the last index at this tick, keeping only the marks a lease can still use. */
  mark(tick: number, lastIndex: number, leaseTicks: number): void {
    const marks = this.marks;
    marks.push({ tick, lastIndex });
    while (marks.length > 1 && (marks[0] as AppendMark).tick <= tick - leaseTicks - 1) marks.shift();
  }

  /**
   * A lower bound of the leader tick at which entry `index` (of this term) was
   * appended, hence of the send tick of any message carrying it; -Infinity
   * when the entry is older than the marks kept.
   */
  appendTick(index: number): number {
    for (let i = this.marks.length - 1; i >= 0; i--) {
      const m = this.marks[i] as AppendMark;
      if (m.lastIndex < index) return m.tick;
    }
    return Number.NEGATIVE_INFINITY;
  }
}

/**
 * The lease validity rule: a quorum of voters, counting the leader `self`,
 * acknowledged a message the leader sent less than `leaseTicks` of its ticks
 * before `ticks` (each peer's `ackedTick`).
 */
export function quorumAckedWithin(
  self: PeerId,
  voters: ReadonlySet<PeerId>,
  progress: ReadonlyMap<PeerId, Progress>,
  ticks: number,
  leaseTicks: number,
  quorum: number,
): boolean {
  const horizon = ticks - leaseTicks;
  let fresh = 0;
  for (const v of voters) {
    if (v === self) fresh++;
    else if ((progress.get(v)?.ackedTick ?? Number.NEGATIVE_INFINITY) > horizon) fresh++;
  }
  return fresh >= quorum;
}
