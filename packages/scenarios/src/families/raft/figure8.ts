/**
 * `raft-5-figure8`: the history of Figure 8 of the Raft paper (§5.4.2),
 * scripted by ./figure8-director.ts with precise partitions around three
 * leader changes, on a group of five voters that send one entry per append
 * message and no client load: a leader that commits an earlier term's entry
 * by counting replicas lets it be overwritten, and Raft's invariants
 * (state-machine safety, leader completeness) catch it. `figure8Reached`
 * counts runs that reached the last step.
 */

import { InvariantRegistry, type RaftClusterView, registerRaftInvariants } from '@parley/check';
import type { PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { figure8Director } from './figure8-director.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from './group.js';
import { RaftGuardWatch } from './guards.js';
import { RaftHost } from './host.js';

const TICK_MS = 100;

function setupFigure8(sim: Simulation): ScenarioRun {
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

  const director = figure8Director({
    sim,
    ids,
    app,
    proposeOld: (l) => l.propose('figure8', 1, 'old-term entry'),
  });

  return {
    quiesce() {
      director.stop();
    },
    converged() {
      const l = highestTermLeader(ids, app);
      return l !== undefined && raftGroupConverged(l, ids, app);
    },
    check() {},
    metrics: () => ({ figure8Reached: director.reached, 'guard.oldTermCommitByCount': guards.oldTermCommitByCount }),
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
