/** The `coord-*` scenario table (registered by ./coord.ts). */

import { PARTITION_KINDS } from '@parley/sim';
import type { Scenario } from '../../registry.js';
import { coordScenario } from './setup.js';

const LOSSY = { lossRate: 0.1, duplicateRate: 0.05, reorder: true, latency: { minMs: 1, meanMs: 8, maxMs: 120 } };

export const COORD_SCENARIOS: readonly Scenario[] = [
  ...([3, 5] as const).map((v) =>
    coordScenario({
      name: `coord-${v}-partition`,
      description: `${v} voters, 6 clients; partitions of every kind, 2% loss with reordering; clocks ±100 ms apart.`,
      voters: v,
      workload: 'mixed',
      network: { lossRate: 0.02, reorder: true },
      nemesis: { partitions: PARTITION_KINDS },
      skewMs: 100,
    }),
  ),
  coordScenario({
    name: 'coord-3-crash',
    description: '3 voters, 6 clients; crashes losing unsynced writes (torn tails), restart from disk; 2% loss.',
    voters: 3,
    workload: 'mixed',
    network: { lossRate: 0.02, duplicateRate: 0.02 },
    nemesis: { crashes: true, maxDown: 1 },
    disk: { tornWriteRate: 0.5 },
    skewMs: 100,
  }),
  coordScenario({
    name: 'coord-3-pause-skew',
    description: '3 voters, 6 clients; paused voters (a paused leader wakes up deposed), clocks ±250 ms with drift.',
    voters: 3,
    workload: 'mixed',
    network: { lossRate: 0.02 },
    nemesis: { pauses: true },
    skewMs: 250,
    driftPpm: 200,
  }),
  coordScenario({
    name: 'coord-5-chaos',
    description:
      '5 voters, 8 clients; lossy network, partitions, crashes, pauses and clogs at once; clocks ±200 ms; snapshot every 10 entries.',
    voters: 5,
    workload: 'mixed',
    clients: 8,
    snapshotEveryEntries: 10,
    keepEntries: 0,
    network: LOSSY,
    nemesis: { partitions: PARTITION_KINDS, crashes: true, pauses: true, clogs: true, maxDown: 2 },
    disk: { tornWriteRate: 0.5 },
    skewMs: 200,
    driftPpm: 100,
  }),
  ...([3, 5] as const).map((v) =>
    coordScenario({
      name: `coord-${v}-lease-reads`,
      description: `${v} voters, 6 clients; leaders answer reads from their lease (half the reads skip the log); the nemesis cuts off leaders, pauses followers, one-way partitions; clocks ±100 ms with drift.`,
      voters: v,
      workload: 'mixed',
      readOnly: 'leaseBased',
      cutLeaderAfterQuorumCheck: true,
      network: { lossRate: 0.02, reorder: true },
      nemesis: {
        partitions: ['leader', 'leader', 'one-way', 'isolate'],
        pauses: true,
        // Leaders too: the driver counts the tick periods a pause held up (its clock runs on), so
        // a leader waking deposed has lost its lease (seed 300037 failed when it did not).
        pauseLeaders: true,
        // Long enough for the rest to elect a successor while the cut-off leader still believes it leads.
        durationMs: { min: 1_500, max: 4_000 },
      },
      skewMs: 100,
      driftPpm: 200,
      safetyMs: 10_000,
    }),
  ),
  coordScenario({
    name: 'coord-5-deposed-leader',
    description:
      '5 voters, 6 clients; the leader is cut off just before a check-quorum round, so it believes it leads while the others elect a successor; clients split between them, half the reads through ReadIndex.',
    voters: 5,
    workload: 'mixed',
    network: { lossRate: 0.01 },
    nemesis: {},
    cutLeaderAfterQuorumCheck: true,
    skewMs: 50,
    safetyMs: 10_000,
  }),
  coordScenario({
    name: 'coord-5-hot-cas',
    description:
      "5 voters, 8 clients CAS one key with the version each last learned (a failure's actual too); the leader is cut off just before a check-quorum round (it believes it leads while the others elect a successor; clients split between them); 3% loss with duplicates, so answers are lost and CASes retried.",
    voters: 5,
    workload: 'hot-cas',
    clients: 8,
    network: { lossRate: 0.03, duplicateRate: 0.02, reorder: true },
    nemesis: {},
    cutLeaderAfterQuorumCheck: true,
    skewMs: 50,
    safetyMs: 10_000,
  }),
  coordScenario({
    name: 'coord-5-hot-cas-stale-leader',
    description:
      '5 voters, 8 clients CAS one key; the leader is suspended and cut off just before a check-quorum round, and once a successor has committed CASes it resumes believing it leads; the clients pinned to it CAS there with the version last learned by anyone, which it has not seen.',
    voters: 5,
    workload: 'hot-cas',
    clients: 8,
    network: { lossRate: 0.01 },
    nemesis: {},
    staleLeaderReads: true,
    skewMs: 50,
    safetyMs: 10_000,
  }),
  coordScenario({
    name: 'coord-5-figure8',
    description:
      "5 voters, 6 clients, one entry per append; Figure 8 of the Raft paper scripted under the client load (partitions around three leader changes): a leader that commits an earlier term's entry by counting replicas lets it be overwritten.",
    voters: 5,
    workload: 'mixed',
    maxSizePerMsgBytes: 1,
    snapshotEveryEntries: 1_000,
    nemesis: {},
    figure8: true,
    skewMs: 50,
    safetyMs: 15_000,
  }),
  coordScenario({
    name: 'coord-5-stale-reads',
    description:
      '5 voters, 6 clients; the leader is suspended (its clock stands still, as in a suspended VM) just before a check-quorum round and cut off; once a successor has committed writes it resumes, still cut off, believing it leads, and half the clients read there (ReadIndex).',
    voters: 5,
    workload: 'mixed',
    network: { lossRate: 0.01 },
    nemesis: {},
    staleLeaderReads: true,
    skewMs: 50,
    safetyMs: 10_000,
  }),
  coordScenario({
    name: 'coord-5-stale-lease-reads',
    description:
      '5 voters, 6 clients; lease reads (half the reads skip the log); the leader is paused (its clock running, as in a GC pause) just before a check-quorum round and cut off; once a successor has committed writes it resumes, still cut off, and half the clients read there.',
    voters: 5,
    workload: 'mixed',
    readOnly: 'leaseBased',
    network: { lossRate: 0.01 },
    nemesis: {},
    staleLeaderReads: 'clock-runs',
    skewMs: 50,
    safetyMs: 10_000,
  }),
  coordScenario({
    name: 'coord-5-lease-drift',
    description:
      "5 voters, 10 clients; lease reads; one voter's clock runs 11% slow, the others 8–10% fast (tick periods 1.22–1.24× apart, inside the lease's 1.29× bound); leadership moves to the slow voter, which is cut off just before a check-quorum round while half the clients stay pinned to it and read through the lease.",
    voters: 5,
    workload: 'mixed',
    clients: 10,
    readOnly: 'leaseBased',
    network: { lossRate: 0.01 },
    nemesis: {},
    leaseDrift: { slowPpm: -110_000, fastPpm: { min: 80_000, max: 100_000 } },
    skewMs: 50,
    safetyMs: 15_000,
  }),
  coordScenario({
    name: 'coord-3-clock-behind',
    description:
      '3 voters, 6 clients; clocks up to ±3 s apart (beyond the 1–2 s election timeout) and stepped ±3 s; the nemesis cuts off or crashes the leader, so a new leader often stamps commands behind state-machine time.',
    voters: 3,
    workload: 'mixed',
    network: { lossRate: 0.02 },
    nemesis: {
      partitions: ['leader', 'leader', 'isolate'],
      crashes: true,
      crashLeader: true,
      clockJumps: true,
      maxClockJumpMs: 3_000,
      maxDown: 1,
    },
    skewMs: 3_000,
    safetyMs: 8_000,
  }),
  coordScenario({
    name: 'coord-5-ttl-clock-behind',
    description:
      '5 voters; TTL rounds while the nemesis cuts off or crashes the leader; clocks up to ±2.5 s apart, beyond the election timeout (the TTL bounds widen with the skew).',
    voters: 5,
    workload: 'ttl',
    network: { lossRate: 0.02 },
    nemesis: { partitions: ['leader', 'leader', 'majority'], crashes: true, crashLeader: true, maxDown: 2 },
    skewMs: 2_500,
  }),
  ...([3, 5] as const).map((v) =>
    coordScenario({
      name: `coord-${v}-ttl-skew`,
      description: `${v} voters; TTL rounds (entries and leases of 1–3 s) under leader changes (partitions, crashes, pauses) with clocks ±200 ms apart.`,
      voters: v,
      workload: 'ttl',
      network: { lossRate: 0.02 },
      nemesis: { partitions: ['isolate', 'majority'], crashes: true, pauses: true, maxDown: v === 3 ? 1 : 2 },
      skewMs: 200,
      driftPpm: 100,
    }),
  ),
  coordScenario({
    name: 'coord-3-ttl-outage',
    description:
      '3 voters; TTL rounds across whole-cluster outages of 1–120 s (every voter down at once, then restarted from disk), so new leaders stamp commands far past state-machine time; single crashes between them; clocks ±200 ms apart.',
    voters: 3,
    workload: 'ttl',
    network: { lossRate: 0.01 },
    nemesis: {
      outages: true,
      outageMs: { min: 1_000, max: 120_000 },
      crashes: true,
      maxDown: 1,
      gapMs: { min: 1_000, max: 8_000 },
    },
    skewMs: 200,
    safetyMs: 150_000,
  }),
];
