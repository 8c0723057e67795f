/**
 * The director of the scripted Figure-8 scenarios (`raft-5-figure8`,
 * `coord-5-figure8`): it reproduces the history of Figure 8 of the Raft paper
 * (§5.4.2) with precise partitions around three leader changes, on a group of
 * five voters that send one entry per append message.
 *
 * 1. A leader L1 (term t1) is cut off with one follower P and appends an
 *    entry at index k that only P receives.
 * 2. L1 and P are isolated; the other three elect L2 (term t2), whose no-op
 *    lands at the same index k. The moment L2 leads it is isolated, so (k, t2)
 *    stays on L2 alone.
 * 3. L1, P and the two remaining voters reconnect (L2 stays away). L1 or P
 *    wins term t3 and brings (k, t1) to a third voter — one entry per message,
 *    so that voter acknowledges k before it sees the new leader's own entry.
 *    (k, t1) is now on a majority, and the leader of t3 commits it as soon as
 *    it may. The moment it commits k, it and the other of L1/P (which has
 *    the new leader's entry too) are isolated and L2 reconnects.
 * 4. A leader that committed (k, t1) by counting replicas — before any entry
 *    of its own term was on a majority — left the two other voters with a
 *    last entry of term t1 < t2: L2 wins their votes and overwrites index k. Raft's
 *    invariants (state-machine safety, leader completeness) catch it. A
 *    correct leader commits k only with its own entry at k+1 on a majority,
 *    and then L2 cannot win.
 *
 * Each run draws who leads, who follows and every timing from its seed; the
 * director only reacts to what the group does (after every event), so a run
 * that takes another path (L1 already deposed, ...) goes on as a plain
 * partition history. `reached` counts runs that reached step 4.
 */
import type { PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { highestTermLeader, type RaftMember } from './group.js';

type Step = 'elect' | 'replicate-old' | 'second-leader' | 'third-leader' | 'overwrite' | 'done';

export interface Figure8Deps<H extends RaftMember> {
  readonly sim: Simulation;
  readonly ids: readonly PeerId[];
  readonly app: (id: PeerId) => H | undefined;
  /** Step 1: the leader appends the entry that only P will receive (false: it could not). */
  proposeOld(leader: H): boolean;
  /**
   * Step 1 waits until the leader has been settled for a drawn 200–500 ms, then until
   * `ready` holds at one instant. Default for both: its log is committed to its last index.
   */
  settled?(leader: H): boolean;
  ready?(leader: H): boolean;
}

export interface Figure8Director {
  /** Runs that reached step 4 (0 or 1). */
  readonly reached: number;
  /** Ends the script (the liveness phase). */
  stop(): void;
}

const committedToLast = (l: RaftMember): boolean => {
  const r = l.driver.probe;
  return r.committed === r.lastIndex();
};

/** Installs the director as an invariant hook that never fails. */
export function figure8Director<H extends RaftMember>(deps: Figure8Deps<H>): Figure8Director {
  const { sim, ids, app, proposeOld } = deps;
  const settled = deps.settled ?? committedToLast;
  const ready = deps.ready ?? (() => true);
  const rng = sim.random;
  let step: Step = 'elect';
  const settleMs = 200 + rng.int(300);
  let stableSince = -1;
  let l1: PeerId | undefined;
  let partner: PeerId | undefined;
  let l2: PeerId | undefined;
  let l3: PeerId | undefined;
  let k = 0;
  let t1 = 0;
  let t2 = 0;
  const state = { reached: 0 };
  const net = sim.network;
  const raftOf = (id: PeerId | undefined) => (id === undefined ? undefined : app(id)?.driver.probe);

  sim.invariant('figure8/director', () => {
    switch (step) {
      case 'elect': {
        const l = highestTermLeader(ids, app);
        const r = l?.driver.probe;
        if (!l || !r || !settled(l)) {
          stableSince = -1;
          return;
        }
        if (stableSince < 0) stableSince = sim.nowMs();
        if (sim.nowMs() - stableSince < settleMs || !ready(l)) return;
        l1 = l.driver.id;
        const followers = ids.filter((x) => x !== l1);
        partner = followers[rng.int(followers.length)] as PeerId;
        net.partition([l1, partner]);
        if (!proposeOld(l)) return;
        k = r.lastIndex();
        t1 = r.term;
        step = 'replicate-old';
        sim.trace(`figure8 L1=${l1} P=${partner} k=${k} t1=${t1}`);
        return;
      }
      case 'replicate-old': {
        const p = raftOf(partner);
        if (!p || p.lastIndex() < k || p.termAt(k) !== t1) return;
        net.heal();
        net.partition([l1 as PeerId], [partner as PeerId]);
        step = 'second-leader';
        return;
      }
      case 'second-leader': {
        for (const id of ids) {
          if (id === l1 || id === partner) continue;
          const r = raftOf(id);
          if (r?.state !== 'leader' || r.term <= t1) continue;
          l2 = id;
          t2 = r.term;
          net.heal();
          net.isolate(l2);
          step = 'third-leader';
          sim.trace(`figure8 L2=${l2} t2=${t2} holds term ${r.termAt(k)} at ${k}`);
          return;
        }
        return;
      }
      case 'third-leader': {
        for (const id of [l1, partner]) {
          const r = raftOf(id);
          if (r?.state !== 'leader' || r.term <= t2 || r.committed < k) continue;
          l3 = id;
          // The other holder of (k, t1) also has the new leader's entry by now: it goes too.
          const other = (id === l1 ? partner : l1) as PeerId;
          net.heal();
          net.partition([l3 as PeerId], [other]);
          step = 'overwrite';
          state.reached++;
          sim.trace(`figure8 L3=${l3} t3=${r.term} committed ${r.committed} (term ${r.termAt(k)} at ${k})`);
          return;
        }
        return;
      }
      default:
        return;
    }
  });

  return {
    get reached() {
      return state.reached;
    },
    stop() {
      step = 'done';
    },
  };
}
