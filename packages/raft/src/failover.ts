import type { PeerId } from '@parley/interface';
import type { VoteMessage } from './types.js';

/**
 * Failover on connection loss: when a follower's connection to its leader
 * closes, it campaigns (pre-vote) early instead of waiting out the election
 * timeout. The voters left take turns in a fixed order (by id): the first
 * campaigns at once, the next `FAILOVER_STEP_TICKS` later, and so on, then
 * round again (`FAILOVER_ROUNDS` turns each). Members' ticks are not in
 * phase, so turns two ticks apart start at least one tick period apart: the
 * first candidate's pre-vote reaches the others before their turn, and a
 * voter that grants another's pre-vote waits a round more, so votes do not
 * split. A pre-vote that reached a voter still deferring to the
 * leader (it had not yet seen the close) is kept there and answered once
 * that voter sees the close too; a campaign that still won no quorum is
 * retried on the candidate's next turn. Then the election timeout applies.
 */

/** Ticks between two voters' turns. */
export const FAILOVER_STEP_TICKS = 2;
/** Turns each surviving voter takes. */
export const FAILOVER_ROUNDS = 2;
/** Ticks a pre-vote refused as sticky is kept for answering once the leader's connection closes here. */
export const FAILOVER_KEEP_TICKS = 2;

/** The turn of `self` (0 first) among the voters other than `lost`, and how many they are (turn -1: not one of them). */
export function failoverTurn(self: PeerId, lost: PeerId, voters: Iterable<PeerId>): { turn: number; of: number } {
  const survivors = [...voters].filter((v) => v !== lost).sort();
  return { turn: survivors.indexOf(self), of: survivors.length };
}

/** The countdown of a voter's early campaigns after its leader's connection closed (idle while not armed). */
export class FailoverTimer {
  /** Ticks until the next early campaign. */
  private due: number | undefined;
  private period = 1;
  /** Early campaigns still allowed after the next one. */
  private left = 0;

  get armed(): boolean {
    return this.due !== undefined;
  }

  /**
   * Plans `rounds` campaigns, the first in `delay` ticks (0: the caller
   * campaigns now), then every `period` ticks.
   */
  arm(delay: number, period: number, rounds: number): void {
    this.period = Math.max(1, period);
    if (delay <= 0) {
      this.left = rounds - 2;
      this.due = rounds > 1 ? this.period : undefined;
    } else {
      this.left = rounds - 1;
      this.due = delay;
    }
  }

  /** Another voter's campaign was granted: it runs ahead, so the next turn here waits a round more. */
  postpone(): void {
    if (this.due !== undefined) this.due += this.period;
  }

  clear(): void {
    this.due = undefined;
    this.left = 0;
  }

  /** Counts one tick; true when an early campaign is due now. */
  tick(): boolean {
    if (this.due === undefined) return false;
    this.due--;
    if (this.due > 0) return false;
    if (this.left > 0) {
      this.left--;
      this.due = this.period;
    } else this.due = undefined;
    return true;
  }
}

/** Pre-votes refused as sticky lately, one per candidate: answered if the leader's connection closes soon after. */
export class KeptPreVotes {
  private readonly kept = new Map<PeerId, { m: VoteMessage; atTick: number }>();

  keep(m: VoteMessage, atTick: number): void {
    this.kept.set(m.from, { m, atTick });
  }

  /** Takes the pre-votes kept within `FAILOVER_KEEP_TICKS` of `nowTick`, in candidate order; forgets the rest. */
  take(nowTick: number): VoteMessage[] {
    const out = [...this.kept.entries()]
      .filter(([, k]) => nowTick - k.atTick <= FAILOVER_KEEP_TICKS)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, k]) => k.m);
    this.kept.clear();
    return out;
  }

  clear(): void {
    this.kept.clear();
  }
}
