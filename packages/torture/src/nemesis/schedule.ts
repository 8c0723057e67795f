/**
 * The fault schedule: a pure function of the seed, the enabled nemeses and the
 * cluster's shape, written to `schedule.json` with every run and read back by
 * `--replay`. Faults come one at a time, each after a quiet gap counted from
 * the end of the previous one's heal (restarting a node can take long on a
 * loaded machine, and faults must not overlap, so each one's availability
 * figures are its own); a target is a process name fixed here, or `leader`,
 * resolved when the fault begins.
 */
import { Random } from '../random.js';

export const NEMESES = ['kill', 'pause', 'outage', 'partition', 'clock', 'disk-full', 'disk-ro'] as const;
export type NemesisKind = (typeof NEMESES)[number];

export type PartitionShape = 'isolate' | 'cut' | 'bridge';

export interface Step {
  /** Quiet time before it: after the start of the workloads, or after the previous fault's heal completed. */
  readonly gapMs: number;
  readonly kind: NemesisKind;
  /** A process name, `leader`, `all` (the servers: voters or etcd members) or `every` (every process). */
  readonly target: string;
  readonly durationMs: number;
  /** partition: the shape, and for `cut` / `bridge` the other process. */
  readonly shape?: PartitionShape;
  readonly peer?: string;
  /** clock: the offset of each node, in ms. */
  readonly offsets?: Readonly<Record<string, number>>;
}

export interface Schedule {
  readonly version: 1;
  readonly seed: number;
  readonly backend: string;
  readonly durationMs: number;
  readonly steps: readonly Step[];
}

export interface ScheduleShape {
  /** Names of the processes holding strong state (voters, or etcd members). */
  readonly servers: readonly string[];
  /** Names of the Parley nodes whose clocks and disks faults may change. */
  readonly clockNodes: readonly string[];
  readonly diskNodes: readonly string[];
}

export interface ScheduleOptions {
  readonly seed: number;
  readonly backend: string;
  readonly durationMs: number;
  readonly nemeses: readonly NemesisKind[];
  /** Clock offsets are drawn from ±this. */
  readonly maxClockOffsetMs: number;
  /** Outages last this long (ms, both included). */
  readonly outageMs: readonly [number, number];
  /** Quiet time before the first fault and between faults. */
  readonly quietMs: readonly [number, number];
  /** Quiet time kept at the end for the workloads after the last heal (counted in the nominal length). */
  readonly tailMs: number;
}

function duration(rnd: Random, kind: NemesisKind, o: ScheduleOptions): number {
  switch (kind) {
    case 'outage':
      return rnd.int(o.outageMs[0], o.outageMs[1]);
    case 'kill':
      return rnd.int(1_000, 6_000);
    case 'pause':
      return rnd.int(2_000, 12_000);
    case 'partition':
      return rnd.int(3_000, 15_000);
    case 'clock':
      return rnd.int(5_000, 20_000);
    case 'disk-full':
    case 'disk-ro':
      return rnd.int(3_000, 10_000);
  }
}

function step(
  rnd: Random,
  kind: NemesisKind,
  gapMs: number,
  durationMs: number,
  shape: ScheduleShape,
  o: ScheduleOptions,
): Step {
  const anyServer = () => rnd.pick(shape.servers);
  switch (kind) {
    case 'kill': {
      const target = rnd.chance(0.45) ? 'leader' : rnd.chance(0.8) ? anyServer() : 'all';
      return { gapMs, kind, target, durationMs };
    }
    case 'pause':
      return { gapMs, kind, target: rnd.chance(0.5) ? 'leader' : anyServer(), durationMs };
    case 'outage':
      // Every voter (non-voters stay up, calling a group that is gone), or every process.
      return { gapMs, kind, target: rnd.chance(0.5) ? 'all' : 'every', durationMs };
    case 'partition': {
      const s: PartitionShape = rnd.pick(['isolate', 'isolate', 'cut', 'bridge'] as const);
      const target = s === 'isolate' && rnd.chance(0.5) ? 'leader' : anyServer();
      if (s === 'isolate') return { gapMs, kind, target, durationMs, shape: s };
      const others = shape.servers.filter((n) => n !== target);
      return { gapMs, kind, target, durationMs, shape: s, peer: rnd.pick(others) };
    }
    case 'clock': {
      const offsets: Record<string, number> = {};
      for (const n of shape.clockNodes) offsets[n] = rnd.int(-o.maxClockOffsetMs, o.maxClockOffsetMs);
      return { gapMs, kind, target: 'all', durationMs, offsets };
    }
    case 'disk-full':
    case 'disk-ro':
      return { gapMs, kind, target: rnd.pick(shape.diskNodes), durationMs };
  }
}

/**
 * The schedule of `o.seed`: faults cycling through the enabled nemeses in a
 * shuffled order until their nominal length (gaps and durations, without the
 * time restarts take) would pass `durationMs − tailMs`.
 */
export function makeSchedule(o: ScheduleOptions, shape: ScheduleShape): Schedule {
  const rnd = new Random(o.seed).fork('schedule');
  const kinds = o.nemeses.filter(
    (k) =>
      (k !== 'clock' || shape.clockNodes.length > 0) &&
      ((k !== 'disk-full' && k !== 'disk-ro') || shape.diskNodes.length > 0),
  );
  const steps: Step[] = [];
  let t = 0;
  let deck: NemesisKind[] = [];
  while (kinds.length > 0) {
    if (deck.length === 0) deck = shuffle(rnd, kinds);
    const kind = deck.shift() as NemesisKind;
    const gap = rnd.int(o.quietMs[0], o.quietMs[1]);
    const d = duration(rnd, kind, o);
    if (t + gap + d + o.tailMs > o.durationMs) break;
    steps.push(step(rnd, kind, gap, d, shape, o));
    t += gap + d;
  }
  return { version: 1, seed: o.seed, backend: o.backend, durationMs: o.durationMs, steps };
}

function shuffle<T>(rnd: Random, items: readonly T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = rnd.int(0, i);
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

/** Reads a schedule file back, refusing anything that is not one. */
export function parseSchedule(text: string): Schedule {
  const s = JSON.parse(text) as Schedule;
  if (s.version !== 1 || !Array.isArray(s.steps) || typeof s.durationMs !== 'number' || typeof s.seed !== 'number') {
    throw new Error('not a torture schedule (version 1)');
  }
  for (const st of s.steps) {
    if (!(NEMESES as readonly string[]).includes(st.kind)) throw new Error(`unknown nemesis ${st.kind}`);
    if (typeof st.gapMs !== 'number' || typeof st.durationMs !== 'number' || typeof st.target !== 'string') {
      throw new Error('a step needs gapMs, durationMs and target');
    }
  }
  return s;
}
