/**
 * The directors of the `coord-*` scenarios: faults that react to what the Raft
 * group does, checked after every event — the leader cut after a check-quorum
 * round, Figure 8 scripted under the client load, the stale (suspended or
 * paused) leader that clients read from, and the lease-drift rounds. Which ones
 * run is the scenario's configuration; each reports its own counters.
 */
import type { PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { figure8Director } from '../raft/figure8-director.js';
import type { Client, CoordScenarioConfig } from './config.js';
import { cutLeaderAfterQuorumCheck } from './cut-leader.js';
import type { CoordHost } from './host.js';
import { type leaseDriftClocks, leaseDriftDirector } from './lease-drift.js';
import { staleLeaderDirector } from './stale-leader.js';

export interface DirectorDeps {
  readonly voters: readonly PeerId[];
  readonly app: (id: PeerId) => CoordHost | undefined;
  readonly clients: readonly Client[];
  readonly isRunning: () => boolean;
  /** The lease-drift clocks, when the scenario has them. */
  readonly leaseClocks: ReturnType<typeof leaseDriftClocks> | false | undefined;
  /** Re-sends a client's call in flight (a director moved the client). */
  readonly resend: (c: Client) => void;
}

export interface Directors {
  /** Stops what must stop with the workload (the Figure-8 script). */
  stop(): void;
  /** The directors' counters, for the run's metrics. */
  metrics(maxClockSpreadMs: number): Record<string, number>;
}

export function installDirectors(sim: Simulation, config: CoordScenarioConfig, deps: DirectorDeps): Directors {
  const { voters, app, clients, isRunning, leaseClocks } = deps;
  const leaderCut = config.cutLeaderAfterQuorumCheck
    ? cutLeaderAfterQuorumCheck(sim, voters, app, isRunning)
    : undefined;

  const figure8 = config.figure8
    ? figure8Director({
        sim,
        ids: voters,
        app,
        proposeOld: (l) =>
          l.submit({ op: { type: 'set', namespace: 'figure8', key: 'k', value: 'old-term entry' } }, () => {}),
        settled: (l) => l.driver.probe.committedEntryInCurrentTerm(),
        // Under client load: at an instant when every voter holds the leader's whole log, so
        // that L2's no-op lands at the index of the step-1 entry.
        ready: (l) => {
          const r = l.driver.probe;
          const last = r.lastIndex();
          return r.committed === last && voters.every((v) => v === l.ctx.id || r.progress.get(v)?.match === last);
        },
      })
    : undefined;

  const staleLeader = config.staleLeaderReads
    ? staleLeaderDirector({
        sim,
        voters,
        app,
        clients,
        isRunning,
        clockRunsInPause: config.staleLeaderReads === 'clock-runs',
      })
    : undefined;

  const leaseDrift = leaseClocks
    ? leaseDriftDirector({ sim, voters, app, clients, isRunning, slow: leaseClocks.slow, resend: deps.resend })
    : undefined;

  return {
    stop() {
      figure8?.stop();
    },
    metrics(maxClockSpreadMs) {
      return {
        leaderCuts: leaderCut?.cuts ?? 0,
        ...(figure8 === undefined ? {} : { figure8Reached: figure8.reached }),
        ...(leaseDrift === undefined || !leaseClocks
          ? {}
          : {
              leaseDriftTickRatio: Math.round(leaseClocks.tickRatio * 1_000) / 1_000,
              maxClockSpreadMs,
              leaseDriftTransfers: leaseDrift.transfers,
              leaseDriftCuts: leaseDrift.cuts,
              leaseDriftDeposedWindows: leaseDrift.deposedWindows,
              leaseDriftClientsPinned: leaseDrift.clientsPinned,
              leaseDriftEarlyCampaigns: leaseDrift.earlyCampaigns,
            }),
        ...(staleLeader === undefined
          ? {}
          : {
              staleLeaderPauses: staleLeader.pauses,
              staleLeaderWindows: staleLeader.staleWindows,
              staleLeaderClientsRedirected: staleLeader.clientsRedirected,
            }),
      };
    },
  };
}
