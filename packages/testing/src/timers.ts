/**
 * The user's timers, `Date` and `performance.now` on simulated time, with
 * @sinonjs/fake-timers. The fake clock reads the simulation's global time
 * (it never advances on its own); every pending user timer is mirrored by one
 * simulation event at its due time, so user callbacks interleave with the
 * nodes' own events in one seeded order. `queueMicrotask`, `process.nextTick`
 * and `setImmediate` stay real: promise continuations run between events, as
 * the simulator already drains them after every event.
 */
import type { Cancel } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { type Clock as FakeClock, withGlobal } from '@sinonjs/fake-timers';

/** What is faked while a simulation runs. */
export const FAKED = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] as const;
/** User timers one wake-up may fire before it reports a runaway loop. */
export const MAX_TIMERS_PER_INSTANT = 10_000;

interface FakeTimer {
  callAt: number;
}
interface ClockInternals {
  timers?: Map<number, FakeTimer>;
  timerHeap?: { peek(): FakeTimer | undefined };
}

let installed: SimulatedTimers | undefined;

export class SimulatedTimers {
  private armedAt = Number.POSITIVE_INFINITY;
  private cancelArmed: Cancel | undefined;
  private removed = false;

  private constructor(
    private readonly sim: Simulation,
    private readonly clock: FakeClock,
  ) {}

  /** Installs the fake globals for `sim`. Only one simulation may own them at a time. */
  static install(sim: Simulation): SimulatedTimers {
    if (installed !== undefined) {
      throw new Error('simulate() is already running: simulations cannot nest or run concurrently in one process');
    }
    const clock = withGlobal(globalThis).install({
      now: sim.epochMs,
      toFake: [...FAKED],
      loopLimit: MAX_TIMERS_PER_INSTANT,
    });
    // The fake clock shows the simulation's time; fake-timers' own writes to `now` are moot.
    Object.defineProperty(clock, 'now', {
      configurable: true,
      enumerable: true,
      get: () => sim.epochMs + sim.nowMs(),
      set: () => {},
    });
    const timers = new SimulatedTimers(sim, clock);
    const g = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of ['setTimeout', 'setInterval'] as const) {
      const fake = g[name] as (...args: unknown[]) => unknown;
      g[name] = (...args: unknown[]) => {
        const id = fake(...args);
        timers.arm();
        return id;
      };
    }
    installed = timers;
    return timers;
  }

  /** User timers still pending. */
  get pending(): number {
    return this.clock.countTimers();
  }

  /** Restores the real globals; pending user timers are dropped. Idempotent. */
  uninstall(): void {
    if (this.removed) return;
    this.removed = true;
    this.cancelArmed?.();
    this.cancelArmed = undefined;
    delete (this.clock as unknown as Record<string, unknown>).now;
    this.clock.reset();
    this.clock.uninstall();
    if (installed === this) installed = undefined;
  }

  private earliest(): number | undefined {
    const c = this.clock as unknown as ClockInternals;
    if (c.timerHeap) return c.timerHeap.peek()?.callAt;
    let min: number | undefined;
    for (const t of c.timers?.values() ?? []) if (min === undefined || t.callAt < min) min = t.callAt;
    return min;
  }

  /** Makes sure one simulation event waits for the earliest user timer. */
  private arm(): void {
    if (this.removed) return;
    const callAt = this.earliest();
    if (callAt === undefined) return;
    const at = callAt - this.sim.epochMs;
    if (at >= this.armedAt) return;
    this.cancelArmed?.();
    this.armedAt = at;
    this.cancelArmed = this.sim.schedule(Math.max(0, at - this.sim.nowMs()), () => this.wake(), 'user-timer');
  }

  /** Fires every user timer due now, in fake-timers' order; a callback that throws fails the run. */
  private wake(): void {
    this.armedAt = Number.POSITIVE_INFINITY;
    this.cancelArmed = undefined;
    const now = this.sim.epochMs + this.sim.nowMs();
    try {
      for (let fired = 0; ; fired++) {
        const callAt = this.earliest();
        if (callAt === undefined || callAt > now) break;
        if (fired >= MAX_TIMERS_PER_INSTANT) {
          throw new Error(`more than ${MAX_TIMERS_PER_INSTANT} user timers at one instant (a timer loop?)`);
        }
        this.clock.next();
      }
    } finally {
      this.arm();
    }
  }
}
