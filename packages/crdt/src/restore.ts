/**
 * Restore of a replica from its own durable records: most states of a
 * snapshot are fresh (their key not held yet, their dot above every dot of
 * their origin seen so far), and a fresh register or tombstone joins into
 * nothing. Such a state is installed straight into the state map, dot index
 * and context, with exactly the effects the general join has on it (install
 * and observe); every other state goes through the general join.
 */
import { InvalidArgumentError } from '@parley/interface';
import { collectableAt } from './collected.js';
import type { DotContext } from './context.js';
import type { DotIndex } from './dot-index.js';
import type { HybridLogicalClock } from './hlc.js';
import { maxWallOf } from './key-state.js';
import { Register } from './register.js';
import type { Delta, KeyState } from './types.js';

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

/** A replica as restoreRecords sees it: its structures, and its general paths. */
export interface RestoreTarget extends FreshTarget {
  readonly namespace: string;
  /** The general path for one state at its turn: skipped when seen, else joined. */
  join(state: KeyState): void;
  /** The general path for a whole delta (merge without the deps rule). */
  applyDelta(delta: Delta): void;
  /** Counts what installFresh installed of one delta, after its context was added. */
  installed(dots: number, tombstones: number): void;
}

/**
 * Applies a replica's own records in order, each as the general merge
 * would: a delta with a state stamped beyond the drift bound takes the
 * general path whole (it counts the refusal and keeps the context out);
 * any other has its fresh states installed, the rest joined, and its
 * context added. InvalidArgumentError for a delta of another namespace
 * (the deltas before it stay applied).
 */
export function restoreRecords(t: RestoreTarget, deltas: readonly Delta[], nowMs: number): void {
  for (const delta of deltas) {
    if (delta.namespace !== t.namespace) {
      throw new InvalidArgumentError(`delta of namespace '${delta.namespace}' merged into '${t.namespace}'`);
    }
    if (delta.states.some((s) => maxWallOf(s) - nowMs > t.clock.maxClockDriftMs)) {
      t.applyDelta(delta);
      continue;
    }
    const { dots, tombstones } = installFresh(t, delta.states, nowMs, (s) => t.join(s));
    t.ctx.addAll(delta.context);
    t.installed(dots, tombstones);
  }
}
