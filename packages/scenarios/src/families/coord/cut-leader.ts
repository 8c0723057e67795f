/**
 * The leader cut of `coord-*-lease-reads` and `coord-5-deposed-leader`
 * (`cutLeaderAfterQuorumCheck`): every few seconds the leader is cut off just
 * before a check-quorum round, for 2.5–4 s. The answers it got since the last
 * round carry it through that round, so it leads on, cut off, for another
 * election timeout while the others elect a successor.
 */
import type { PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { highestTermLeader } from '../raft/group.js';
import type { CoordHost } from './host.js';

export interface CutLeaderStats {
  /** Leaders cut off. */
  cuts: number;
}

/** Installs the cut (an invariant hook that never fails) and returns its counter. */
export function cutLeaderAfterQuorumCheck(
  sim: Simulation,
  voters: readonly PeerId[],
  app: (id: PeerId) => CoordHost | undefined,
  isRunning: () => boolean,
): CutLeaderStats {
  const rng = sim.random;
  const stats: CutLeaderStats = { cuts: 0 };
  let cutUntil = -1;
  let nextCut = 1_500 + rng.int(1_000);
  sim.invariant('coord/cut-leader', () => {
    const now = sim.nowMs();
    if (!isRunning()) return;
    if (cutUntil >= 0) {
      if (now < cutUntil) return;
      sim.network.heal();
      cutUntil = -1;
      nextCut = now + 1_000 + rng.int(1_500);
      return;
    }
    if (now < nextCut) return;
    // Just before its next check-quorum round: the answers it got since the last one
    // carry it through that round, so it leads on, cut off, for another election timeout.
    const l = highestTermLeader(voters, app);
    const r = l?.driver.probe;
    if (!l || !r || r.electionElapsed !== r.electionTimeout - 1) return;
    sim.network.partition([l.ctx.id]);
    cutUntil = now + 2_500 + rng.int(1_500);
    stats.cuts++;
  });
  return stats;
}
