/**
 * `raft-5-figure8`: the history of Figure 8 of the Raft paper (§5.4.2),
 * scripted with precise partitions around three leader changes, on a group of
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
 * director below only reacts to what the group does (after every event), so
 * a run that takes another path (L1 already deposed, ...) goes on as a
 * plain partition history. `figure8Reached` counts runs that reached step 4.
 */
import type { PeerId } from '@parley/interface';
import { InvariantRegistry } from '../check/invariants.js';
import { type RaftClusterView, registerRaftInvariants } from '../check/raft-invariants.js';
import { registerScenario, type Scenario, type ScenarioRun } from '../scenario.js';
import type { Simulation } from '../simulation.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from './raft-group.js';
import { RaftGuardWatch } from './raft-guards.js';
import { RaftHost } from './raft-host.js';

const TICK_MS = 100;

type Step = 'elect' | 'replicate-old' | 'second-leader' | 'third-leader' | 'overwrite' | 'done';

function setupFigure8(sim: Simulation): ScenarioRun {
  const rng = sim.random;
  const ids: PeerId[] = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const app = (id: PeerId): RaftHost | undefined => {
    const h = sim.host<RaftHost>(id);
    return h.state === 'down' ? undefined : h.app;
  };
  for (const id of ids) {
    sim.addHost(id, (ctx) =>
      RaftHost.boot(ctx, {
        voters: ids,
        joining: false,
        tickMs: TICK_MS,
        snapshotEveryEntries: 1_000,
        keepEntries: 5,
        maxSnapshotChunkBytes: 1024,
        maxSizePerMsgBytes: 1,
        onApply: () => {},
      }),
    );
  }

  const registry = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(registry);
  sim.invariant('raft', () => registry.assertInvariants(raftClusterView(ids, app)));
  const guards = new RaftGuardWatch();
  sim.invariant('raft/guards', () => guards.observe(ids, app));

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
  let reached = 0;
  const net = sim.network;
  const raftOf = (id: PeerId | undefined) => (id === undefined ? undefined : app(id)?.driver.node.raft);

  // The director: runs after every event (an invariant hook that never fails) and moves the
  // script on as soon as the group reaches the state the next step needs.
  sim.invariant('figure8/director', () => {
    switch (step) {
      case 'elect': {
        const l = highestTermLeader(ids, app);
        const r = l?.driver.node.raft;
        if (!l || !r || r.log.committed !== r.log.lastIndex()) {
          stableSince = -1;
          return;
        }
        if (stableSince < 0) stableSince = sim.nowMs();
        if (sim.nowMs() - stableSince < settleMs) return;
        l1 = l.ctx.id;
        const followers = ids.filter((x) => x !== l1);
        partner = followers[rng.int(followers.length)] as PeerId;
        net.partition([l1, partner]);
        if (!l.propose('figure8', 1, 'old-term entry')) return;
        k = r.log.lastIndex();
        t1 = r.term;
        step = 'replicate-old';
        sim.trace(`figure8 L1=${l1} P=${partner} k=${k} t1=${t1}`);
        return;
      }
      case 'replicate-old': {
        const p = raftOf(partner);
        if (!p || p.log.lastIndex() < k || p.log.maybeTerm(k) !== t1) return;
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
          sim.trace(`figure8 L2=${l2} t2=${t2} holds term ${r.log.maybeTerm(k)} at ${k}`);
          return;
        }
        return;
      }
      case 'third-leader': {
        for (const id of [l1, partner]) {
          const r = raftOf(id);
          if (r?.state !== 'leader' || r.term <= t2 || r.log.committed < k) continue;
          l3 = id;
          // The other holder of (k, t1) also has the new leader's entry by now: it goes too.
          const other = (id === l1 ? partner : l1) as PeerId;
          net.heal();
          net.partition([l3 as PeerId], [other]);
          step = 'overwrite';
          reached++;
          sim.trace(`figure8 L3=${l3} t3=${r.term} committed ${r.log.committed} (term ${r.log.maybeTerm(k)} at ${k})`);
          return;
        }
        return;
      }
      default:
        return;
    }
  });

  return {
    quiesce() {
      step = 'done';
    },
    converged() {
      const l = highestTermLeader(ids, app);
      return l !== undefined && raftGroupConverged(l, ids, app);
    },
    check() {},
    metrics: () => ({ figure8Reached: reached, 'guard.oldTermCommitByCount': guards.oldTermCommitByCount }),
  };
}

export const RAFT_FIGURE8: Scenario = {
  name: 'raft-5-figure8',
  description:
    "5 voters, one entry per append; Figure 8 of the Raft paper scripted with partitions around three leader changes: a leader that commits an earlier term's entry by counting replicas lets it be overwritten.",
  safetyMs: 15_000,
  livenessBoundMs: 15_000,
  setup: setupFigure8,
};

registerScenario(RAFT_FIGURE8);
