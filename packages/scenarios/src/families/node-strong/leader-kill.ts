/**
 * The leader kill of `node-strong-*-leader-kill`: every 1.5–3 s the current
 * leader crashes (its connections close behind what it had sent, as a
 * `kill -9` closes TCP sockets) and restarts from disk 0.5–2 s later. Each
 * failover is timed from the crash to the first commit of a leader of a
 * later term, so the run reports how long a survivor took to take over.
 */
import type { PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { highestTermLeader } from '../raft/group.js';
import type { NodeStrongHost } from './host.js';

export interface LeaderKillStats {
  kills: number;
  /** Milliseconds from each kill to a later term's leader committing an entry of its term. */
  failoverMs: number[];
}

export function killLeaders(
  sim: Simulation,
  voters: readonly PeerId[],
  app: (id: PeerId) => NodeStrongHost | undefined,
  isRunning: () => boolean,
): LeaderKillStats {
  const rng = sim.random;
  const stats: LeaderKillStats = { kills: 0, failoverMs: [] };
  let pending: { atMs: number; term: number } | undefined;
  const next = (): void => {
    sim.schedule(
      1_500 + rng.int(1_500),
      () => {
        if (!isRunning()) return;
        const l = highestTermLeader(voters, app);
        if (l && pending === undefined) {
          const term = l.driver.status().term;
          const host = sim.host(l.ctx.id);
          host.crash();
          stats.kills++;
          pending = { atMs: sim.nowMs(), term };
          sim.schedule(500 + rng.int(1_500), () => host.restart(), 'leader-kill-restart');
        }
        next();
      },
      'leader-kill',
    );
  };
  next();
  sim.invariant('node-strong/leader-kill', () => {
    if (pending === undefined) return;
    const l = highestTermLeader(voters, app);
    const st = l?.driver.status();
    if (!l || !st || st.term <= pending.term || !l.driver.probe.committedEntryInCurrentTerm()) return;
    stats.failoverMs.push(sim.nowMs() - pending.atMs);
    pending = undefined;
  });
  return stats;
}
