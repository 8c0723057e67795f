import { ClockDriftError, InvalidArgumentError } from '@parley/interface';
import { MAX_LOGICAL } from './limits.js';

/**
 * A hybrid logical clock stamp: physical milliseconds, a logical counter that
 * orders events within one millisecond, and the id of the node that made it.
 * Stamps are totally ordered by (wallMs, logical, node).
 */
export interface Hlc {
  readonly wallMs: number;
  readonly logical: number;
  readonly node: string;
}

/** The zero stamp: before every stamp a clock can produce. */
export const HLC_ZERO: Hlc = Object.freeze({ wallMs: 0, logical: 0, node: '' });

/** Default bound on how far ahead of the local physical clock a remote stamp may be. */
export const DEFAULT_MAX_CLOCK_DRIFT_MS = 60_000;

/** Total order on stamps: wall time, then logical counter, then node id (code-unit order). */
export function compareHlc(a: Hlc, b: Hlc): number {
  if (a.wallMs !== b.wallMs) return a.wallMs < b.wallMs ? -1 : 1;
  if (a.logical !== b.logical) return a.logical < b.logical ? -1 : 1;
  if (a.node === b.node) return 0;
  return a.node < b.node ? -1 : 1;
}

/** The opaque version string of a stamp: unique per stamp, stable across replicas. */
export function hlcVersion(stamp: Hlc): string {
  return `${stamp.wallMs.toString(36)}.${stamp.logical.toString(36)}.${stamp.node}`;
}

export interface HybridLogicalClockOptions {
  /** A remote stamp further ahead of the local physical clock than this is rejected. Default 60,000. */
  maxClockDriftMs?: number;
  /** Resume after this stamp (for a replica restored from storage). */
  after?: Hlc;
}

function checkPhysical(physicalMs: number): void {
  if (!Number.isSafeInteger(physicalMs) || physicalMs < 0) {
    throw new InvalidArgumentError(`physical time must be a non-negative integer of ms, got ${physicalMs}`);
  }
}

/**
 * Kulkarni et al.'s hybrid logical clock. The caller supplies physical time on
 * every call (the clock reads none), so the simulator can run it on virtual time.
 *
 * @example
 * ```ts
 * const clock = new HybridLogicalClock('node-a');
 * const s1 = clock.now(1_000);      // { wallMs: 1000, logical: 0, node: 'node-a' }
 * const s2 = clock.now(1_000);      // { wallMs: 1000, logical: 1, node: 'node-a' }
 * clock.receive(remoteStamp, 1_001); // adopts a remote stamp, or throws ClockDriftError
 * ```
 */
export class HybridLogicalClock {
  readonly node: string;
  readonly maxClockDriftMs: number;
  private wallMs: number;
  private logical: number;
  private rejected = 0;

  constructor(node: string, options: HybridLogicalClockOptions = {}) {
    if (node.length === 0) throw new InvalidArgumentError('a clock needs a non-empty node id');
    const drift = options.maxClockDriftMs ?? DEFAULT_MAX_CLOCK_DRIFT_MS;
    if (!Number.isSafeInteger(drift) || drift < 0) {
      throw new InvalidArgumentError(`maxClockDriftMs must be a non-negative integer, got ${drift}`);
    }
    this.node = node;
    this.maxClockDriftMs = drift;
    this.wallMs = options.after?.wallMs ?? 0;
    this.logical = options.after?.logical ?? 0;
  }

  /** Remote stamps rejected for drift so far. */
  get rejectedCount(): number {
    return this.rejected;
  }

  /** The last stamp issued or adopted (node is this clock's node). */
  peek(): Hlc {
    return { wallMs: this.wallMs, logical: this.logical, node: this.node };
  }

  /** A fresh stamp for a local event, greater than every stamp seen so far. */
  now(physicalMs: number): Hlc {
    checkPhysical(physicalMs);
    if (physicalMs > this.wallMs) {
      this.wallMs = physicalMs;
      this.logical = 0;
    } else {
      this.logical++;
    }
    this.carry();
    return { wallMs: this.wallMs, logical: this.logical, node: this.node };
  }

  /** Past MAX_LOGICAL the stamp moves to the next millisecond: still greater, still in bounds. */
  private carry(): void {
    if (this.logical > MAX_LOGICAL) {
      this.wallMs++;
      this.logical = 0;
    }
  }

  /** Throws ClockDriftError (and counts it) when `remote` is too far ahead of `physicalMs`; changes nothing. */
  check(remote: Hlc, physicalMs: number): void {
    if (remote.wallMs - physicalMs > this.maxClockDriftMs) {
      this.rejected++;
      throw new ClockDriftError(remote.wallMs, physicalMs, this.maxClockDriftMs);
    }
  }

  /**
   * Adopts a remote stamp so later local stamps order after it. A stamp more
   * than `maxClockDriftMs` ahead of `physicalMs` is rejected with ClockDriftError,
   * counted, and never adopted. Returns the clock's stamp after the receive event.
   */
  receive(remote: Hlc, physicalMs: number): Hlc {
    checkPhysical(physicalMs);
    this.check(remote, physicalMs);
    this.observe(remote, physicalMs);
    return { wallMs: this.wallMs, logical: this.logical, node: this.node };
  }

  /** receive() without the drift check or a new stamp: for stamps already checked. */
  observe(remote: Hlc, physicalMs: number): void {
    const wall = Math.max(this.wallMs, remote.wallMs, physicalMs);
    if (wall === this.wallMs && wall === remote.wallMs) {
      this.logical = Math.max(this.logical, remote.logical) + 1;
    } else if (wall === this.wallMs) {
      this.logical++;
    } else if (wall === remote.wallMs) {
      this.logical = remote.logical + 1;
    } else {
      this.logical = 0;
    }
    this.wallMs = wall;
    this.carry();
  }
}
