/**
 * Per-host simulated clocks. A host's wall clock reads the global simulated
 * time plus an offset, a linear drift (parts per million), an optional
 * periodic wobble (a triangle wave, integer-only) and any step jumps applied
 * so far. Everything is integer arithmetic on milliseconds.
 */
import type { Clock } from '@parley/interface';

export interface PeriodicDrift {
  /** Peak deviation in either direction. */
  amplitudeMs: number;
  periodMs: number;
}

export interface ClockSpec {
  /** Constant offset from true time (may be negative). Default 0. */
  offsetMs?: number;
  /** Linear drift: the clock gains `driftPpm` ms per million ms (negative: loses). Default 0. */
  driftPpm?: number;
  /** A triangle-wave wobble around the linear reading. */
  periodic?: PeriodicDrift;
}

/** Reads a host's local time from the global simulated time. */
export class HostClock implements Clock {
  private offsetMs: number;
  private readonly driftPpm: number;
  private readonly periodic: PeriodicDrift | undefined;

  constructor(
    private readonly globalNowMs: () => number,
    private readonly epochMs: number,
    spec: ClockSpec = {},
  ) {
    this.offsetMs = Math.trunc(spec.offsetMs ?? 0);
    this.driftPpm = Math.trunc(spec.driftPpm ?? 0);
    if (this.driftPpm <= -1_000_000) throw new RangeError('driftPpm must be > -1e6');
    this.periodic = spec.periodic;
    if (this.periodic && !(this.periodic.periodMs > 0)) throw new RangeError('periodic.periodMs must be > 0');
  }

  nowMs(): number {
    return this.epochMs + this.localAt(this.globalNowMs());
  }

  /** Local reading minus the epoch, at global time `t`. */
  localAt(t: number): number {
    let local = t + this.offsetMs + Math.trunc((t * this.driftPpm) / 1_000_000);
    if (this.periodic) {
      const { amplitudeMs, periodMs } = this.periodic;
      const phase = t % periodMs;
      local += Math.trunc((amplitudeMs * (2 * Math.abs(2 * phase - periodMs) - periodMs)) / periodMs);
    }
    return local;
  }

  /** Steps the clock by `deltaMs` (negative: backwards), as an NTP step or a VM resume would. */
  jump(deltaMs: number): void {
    this.offsetMs += Math.trunc(deltaMs);
  }

  /** How far this clock reads from true time now (ms, signed). */
  skewMs(): number {
    const t = this.globalNowMs();
    return this.localAt(t) - t;
  }

  /** Global milliseconds that elapse while this clock advances `localMs` (linear drift only). */
  toGlobalDelay(localMs: number): number {
    const d = Math.max(0, localMs);
    if (this.driftPpm === 0) return Math.ceil(d);
    return Math.ceil((d * 1_000_000) / (1_000_000 + this.driftPpm));
  }
}
