/**
 * The short form of the torture run (`npm test` runs it; `--short` on the
 * command line): every workload at once on three voters and a non-voter, under
 * one fault of each cheap kind from a fixed schedule — a paused leader, an
 * isolated leader, clock offsets, and a whole-cluster outage (every process
 * killed, 8 s: longer than `maxTimeStepMs`, so grants and TTL'd entries made
 * right after it are held to their full TTL) — with every check. Restarts
 * dominate its time on a loaded machine, so it restarts once (the outage);
 * kills of one node, disk faults and outages that leave the non-voters up
 * are the long runs' (docs/torture.md).
 */
import type { Schedule } from './nemesis/schedule.js';
import type { RunOptions } from './run.js';
import { WORKLOADS } from './run.js';

export const SHORT_SCHEDULE: Schedule = {
  version: 1,
  seed: 1,
  backend: 'raft',
  durationMs: 30_000,
  steps: [
    { gapMs: 2_000, kind: 'pause', target: 'leader', durationMs: 3_000 },
    { gapMs: 1_500, kind: 'partition', target: 'leader', shape: 'isolate', durationMs: 4_000 },
    {
      gapMs: 1_500,
      kind: 'clock',
      target: 'all',
      durationMs: 3_000,
      offsets: { n1: 300, n2: -250, n3: 120, n4: -300 },
    },
    { gapMs: 1_500, kind: 'outage', target: 'every', durationMs: 8_000 },
  ],
};

/** The short run's options (the schedule is given as a file: `replay`). */
export function shortOptions(replay: string, outDir: string | undefined, log: (line: string) => void): RunOptions {
  return {
    seed: SHORT_SCHEDULE.seed,
    backend: 'raft',
    durationMs: SHORT_SCHEDULE.durationMs,
    servers: 3,
    gateways: 1,
    nemeses: [],
    workloads: [...WORKLOADS],
    ...(outDir === undefined ? {} : { outDir }),
    replay,
    concurrency: 3,
    ttlSeconds: [2, 5],
    maxClockOffsetMs: 300,
    outageMs: [8_000, 8_000],
    quietMs: [1_500, 1_500],
    tailMs: 10_000,
    thinkMs: 50,
    log,
  };
}
