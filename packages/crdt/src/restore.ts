/**
 * Restore of a replica from its own durable records: most states of a
 * snapshot are fresh (their key not held yet, their dot above every dot of
 * their origin seen so far), and a fresh register or tombstone joins into
 * nothing. Such a state is installed straight into the state map, dot index
 * and context, with exactly the effects the general join has on it (install
 * and observe); every other state goes through the general join.
 */
import { collectableAt } from './collected.js';
import type { DotContext } from './context.js';
import type { DotIndex } from './dot-index.js';
import type { HybridLogicalClock } from './hlc.js';
import { Register } from './register.js';
import type { KeyState } from './types.js';

/** The structures of a replica that a fresh state is installed into. */
export interface FreshTarget {
  readonly states: Map<string, KeyState>;
  readonly ctx: DotContext;
  readonly index: DotIndex;
  readonly clock: HybridLogicalClock;
  readonly tombstoneGraceMs: number;
}

/** What installFresh installed itself: dots (one per state) and tombstones among them. */
export interface Installed {
  dots: number;
  tombstones: number;
}

/**
 * Installs, in order, each state of `states` that is a fresh register or
 * tombstone not collectable at `nowMs`, and hands every other one to `join`
 * (the general path) at its turn. The caller has checked the states' clock
 * drift and adds what this returns to its counts.
 */
export function installFresh(
  t: FreshTarget,
  states: readonly KeyState[],
  nowMs: number,
  join: (state: KeyState) => void,
): Installed {
  const { states: held, ctx, index, clock, tombstoneGraceMs } = t;
  let dots = 0;
  let tombstones = 0;
  for (const s of states) {
    if (
      s.type === 'counter' ||
      ctx.maxSeq(s.node) >= s.seq ||
      held.has(s.key) ||
      collectableAt(s, nowMs, tombstoneGraceMs)
    ) {
      join(s);
      continue;
    }
    held.set(s.key, s.type === 'register' ? Register.from(s) : s);
    ctx.add(s.node, s.seq);
    index.add(s.node, s.seq, s.key);
    clock.observe(s, nowMs);
    dots++;
    if (s.type === 'tombstone') tombstones++;
  }
  return { dots, tombstones };
}
