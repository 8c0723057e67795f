/**
 * Clock offsets per node with libfaketime: each node runs with
 * `LD_PRELOAD=libfaketimeMT.so.1` and `FAKETIME_TIMESTAMP_FILE` naming a file
 * of its own that holds its offset (`+1.250`, `-0.5`: seconds). libfaketime
 * re-reads the file at most once per `FAKETIME_CACHE_DURATION` (1 s), so an
 * offset written while the node runs is a clock jump within a second.
 * `FAKETIME_DONT_FAKE_MONOTONIC=1` leaves CLOCK_MONOTONIC alone: Node's timers
 * (and Raft's ticks) keep real time, only the wall clock (`Date.now`) moves —
 * what an NTP step or a skewed host does.
 *
 * Cannot express: drift (a clock running fast or slow: libfaketime's rate
 * option would slow timers too), or an offset for a Go program such as etcd
 * (Go reads the clock through the vDSO, not libc).
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';

const CANDIDATES = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
  '/usr/local/lib/faketime/libfaketimeMT.so.1',
];

/** How long an offset written to the file may take to apply (libfaketime's cache). */
export const CLOCK_APPLY_MS = 1_000;

/** The libfaketime library, or undefined when it is not installed. */
export function findFaketime(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env.PARLEY_FAKETIME_LIB;
  if (explicit) return existsSync(explicit) ? explicit : undefined;
  return CANDIDATES.find((p) => existsSync(p));
}

/** The spec libfaketime reads for an offset of `ms` milliseconds. */
export function offsetSpec(ms: number): string {
  const s = (Math.abs(ms) / 1000).toFixed(3);
  return `${ms < 0 ? '-' : '+'}${s}`;
}

/** A node's clock: its offset file and the environment that makes the node read it. */
export class NodeClock {
  private offset = 0;

  constructor(
    readonly file: string,
    private readonly lib: string,
  ) {
    this.write(0);
  }

  /** Replaces the file whole (libfaketime must never read it half written). */
  private write(ms: number): void {
    writeFileSync(`${this.file}.tmp`, `${offsetSpec(ms)}\n`, { mode: 0o644 });
    renameSync(`${this.file}.tmp`, this.file);
  }

  /** Environment variables for the node's process. */
  env(): Record<string, string> {
    return {
      LD_PRELOAD: this.lib,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_CACHE_DURATION: String(CLOCK_APPLY_MS / 1000),
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }

  get offsetMs(): number {
    return this.offset;
  }

  /** Sets the offset (applies within CLOCK_APPLY_MS, or at the next start). */
  set(ms: number): void {
    this.offset = ms;
    this.write(ms);
  }
}
