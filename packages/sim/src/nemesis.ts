/**
 * The nemesis: a seeded schedule of faults for the safety phase. Every few
 * hundred milliseconds it picks one enabled fault, applies it for a while,
 * then undoes it. `stop()` ends the schedule and undoes what is still active
 * (the runner's `sim.calm()` then clears the rest).
 */
import type { PeerId } from '@parley/interface';
import { between } from './kernel.js';
import type { Simulation } from './simulation.js';

/**
 * `leader` cuts off the host `NemesisOptions.leader` names (with one follower
 * half of the time): old-term entries stranded on a minority, the raw material
 * of Figure 8 of the Raft paper. Not in `PARTITION_KINDS` (it needs `leader`).
 */
export type PartitionKind = 'symmetric' | 'one-way' | 'isolate' | 'majority' | 'bridge' | 'leader';

export const PARTITION_KINDS: readonly PartitionKind[] = ['symmetric', 'one-way', 'isolate', 'majority', 'bridge'];

export interface NemesisOptions {
  /** Partition kinds to draw from (empty: none). */
  partitions?: readonly PartitionKind[];
  /** Crash a host, restart it later from its disk. */
  crashes?: boolean;
  /** Pause a host, resume it later. */
  pauses?: boolean;
  /**
   * `false`: never pause a host that believes it leads (`leads`), e.g. under lease reads,
   * which assume no leader process pause. Default true.
   */
  pauseLeaders?: boolean;
  /** Does `host` believe it leads (any term)? Needed with `pauseLeaders: false`. */
  leads?: (host: PeerId) => boolean;
  /** Hold a link, release it later. */
  clogs?: boolean;
  /** Step a host's clock by up to ±`maxClockJumpMs`. */
  clockJumps?: boolean;
  maxClockJumpMs?: number;
  /** Gap between two faults. Default 200..1500 ms. */
  gapMs?: { min: number; max: number };
  /** How long one fault lasts. Default 300..3000 ms. */
  durationMs?: { min: number; max: number };
  /** Hosts the nemesis may crash at once (keeps a quorum up for Raft). Default: all but one. */
  maxDown?: number;
  /** The host that currently leads, for `leader` partitions and `crashLeader`. */
  leader?: () => PeerId | undefined;
  /** Crashes pick the current leader (when there is one) instead of a random host. */
  crashLeader?: boolean;
  /**
   * Whole-cluster outages: every host crashes at once (whatever `maxDown` says) and all
   * restart from their disks after a while drawn from `outageMs` (default 1..120 s).
   */
  outages?: boolean;
  outageMs?: { min: number; max: number };
}

export interface NemesisStats {
  partitions: number;
  crashes: number;
  pauses: number;
  clogs: number;
  clockJumps: number;
  outages: number;
}

type Fault = 'partition' | 'crash' | 'pause' | 'clog' | 'clock' | 'outage';

export class Nemesis {
  readonly stats: NemesisStats = {
    partitions: 0,
    crashes: 0,
    pauses: 0,
    clogs: 0,
    clockJumps: 0,
    outages: 0,
  };
  /** Whole-cluster outages so far: when every host went down, and when they restarted. */
  readonly outageWindows: { fromMs: number; toMs?: number }[] = [];
  private stopped = false;
  private readonly undo = new Set<() => void>();
  private readonly faults: Fault[];
  private readonly down = new Set<PeerId>();

  constructor(
    private readonly sim: Simulation,
    private readonly hosts: readonly PeerId[],
    private readonly options: NemesisOptions,
  ) {
    this.faults = [];
    if ((options.partitions?.length ?? 0) > 0) this.faults.push('partition');
    if (options.crashes) this.faults.push('crash');
    if (options.pauses) this.faults.push('pause');
    if (options.clogs) this.faults.push('clog');
    if (options.clockJumps) this.faults.push('clock');
    if (options.outages) this.faults.push('outage');
  }

  /** Starts the schedule. */
  start(): this {
    this.next();
    return this;
  }

  /** Ends the schedule and undoes every fault still active. */
  stop(): void {
    this.stopped = true;
    for (const u of [...this.undo]) u();
    this.undo.clear();
  }

  /**
   * Crashes `host` now (restarting it after a drawn while), unless the schedule
   * stopped, it is down, or `maxDown` hosts are down already. Scenarios call it
   * at chosen moments (a reply sent with a write still in flight). True if it crashed.
   */
  crash(host: PeerId): boolean {
    const maxDown = this.options.maxDown ?? this.hosts.length - 1;
    if (this.stopped || this.down.has(host) || this.down.size >= maxDown) return false;
    if (this.sim.host(host).state === 'down') return false;
    this.down.add(host);
    this.sim.host(host).crash();
    this.stats.crashes++;
    this.during(() => {
      this.down.delete(host);
      if (this.sim.host(host).state === 'down') this.sim.host(host).restart();
    });
    return true;
  }

  private next(): void {
    if (this.faults.length === 0) return;
    const gap = this.options.gapMs ?? { min: 200, max: 1_500 };
    this.sim.schedule(
      between(this.sim.random, gap.min, gap.max),
      () => {
        if (this.stopped) return;
        this.inject(this.faults[this.sim.random.int(this.faults.length)]!);
        this.next();
      },
      'nemesis',
    );
  }

  private pick(n = 1, from: readonly PeerId[] = this.hosts): PeerId[] {
    const pool = [...from];
    const out: PeerId[] = [];
    while (out.length < n && pool.length > 0) out.push(pool.splice(this.sim.random.int(pool.length), 1)[0]!);
    return out;
  }

  /** Crashes every host that is not down yet; all restart together after a drawn `outageMs`. */
  private outage(): void {
    const crashed = this.hosts.filter((h) => !this.down.has(h) && this.sim.host(h).state !== 'down');
    if (crashed.length === 0) return;
    for (const h of crashed) {
      this.down.add(h);
      this.sim.host(h).crash();
    }
    this.stats.outages++;
    const window: { fromMs: number; toMs?: number } = { fromMs: this.sim.nowMs() };
    this.outageWindows.push(window);
    this.during(() => {
      window.toMs = this.sim.nowMs();
      for (const h of crashed) {
        this.down.delete(h);
        if (this.sim.host(h).state === 'down') this.sim.host(h).restart();
      }
    }, this.options.outageMs ?? { min: 1_000, max: 120_000 });
  }

  /** Applies `apply` now and `revert` after a drawn duration (or at `stop()`). */
  private during(revert: () => void, d = this.options.durationMs ?? { min: 300, max: 3_000 }): void {
    let done = false;
    const once = () => {
      if (done) return;
      done = true;
      this.undo.delete(once);
      revert();
    };
    this.undo.add(once);
    this.sim.schedule(between(this.sim.random, d.min, d.max), once, 'nemesis-undo');
  }

  private inject(fault: Fault): void {
    const net = this.sim.network;
    const n = this.hosts.length;
    switch (fault) {
      case 'partition': {
        const kinds = (this.options.partitions ?? []).filter((k) => k !== 'bridge' || n >= 3);
        if (kinds.length === 0) return;
        const kind = kinds[this.sim.random.int(kinds.length)]!;
        this.partition(kind);
        this.stats.partitions++;
        this.during(() => net.heal());
        return;
      }
      case 'crash': {
        const lead = this.options.crashLeader ? this.options.leader?.() : undefined;
        const [h] =
          lead !== undefined && !this.down.has(lead)
            ? [lead]
            : this.pick(
                1,
                this.hosts.filter((x) => !this.down.has(x)),
              );
        if (h) this.crash(h);
        return;
      }
      case 'pause': {
        const leads = this.options.leads;
        const spareLeaders = this.options.pauseLeaders === false && leads !== undefined;
        const [h] = spareLeaders
          ? this.pick(
              1,
              this.hosts.filter((x) => !leads(x)),
            )
          : this.pick();
        if (!h || this.sim.host(h).state !== 'up') return;
        this.sim.host(h).pause();
        this.stats.pauses++;
        this.during(() => this.sim.host(h).resume());
        return;
      }
      case 'clog': {
        const [a, b] = this.pick(2);
        if (!a || !b) return;
        net.hold(a, b);
        this.stats.clogs++;
        this.during(() => net.release(a, b));
        return;
      }
      case 'outage':
        this.outage();
        return;
      case 'clock': {
        const [h] = this.pick();
        if (!h) return;
        const max = this.options.maxClockJumpMs ?? 5_000;
        this.sim.host(h).jumpClock(between(this.sim.random, -max, max));
        this.stats.clockJumps++;
        return;
      }
    }
  }

  private partition(kind: PartitionKind): void {
    const net = this.sim.network;
    const n = this.hosts.length;
    switch (kind) {
      case 'symmetric': {
        const side = this.pick(1 + this.sim.random.int(Math.max(1, n - 1)));
        net.partition(side);
        return;
      }
      case 'one-way': {
        const from = this.pick(1 + this.sim.random.int(Math.max(1, n - 1)));
        net.partitionOneWay(
          from,
          this.hosts.filter((h) => !from.includes(h)),
        );
        return;
      }
      case 'isolate':
        net.isolate(this.pick()[0]!);
        return;
      case 'majority':
        net.partition(this.pick(Math.floor((n - 1) / 2) || 1));
        return;
      case 'bridge': {
        const [a, b, c] = this.pick(3);
        net.bridge(a!, b!, c!);
        return;
      }
      case 'leader': {
        const lead = this.options.leader?.();
        if (lead === undefined) {
          net.isolate(this.pick()[0]!);
          return;
        }
        const side = [lead];
        if (this.sim.random.int(2) === 0)
          side.push(
            ...this.pick(
              1,
              this.hosts.filter((h) => h !== lead),
            ),
          );
        net.partition(side);
        return;
      }
    }
  }
}
