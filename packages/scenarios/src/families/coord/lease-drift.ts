/**
 * `coord-5-lease-drift`: lease reads at a deposed leader whose ticks run slow,
 * within the drift the lease is designed for (packages/raft/INTERNALS.md,
 * "Lease reads"): the leader's tick period at most (E − 1) / (E − 1 − margin)
 * times any voter's, 9/7 ≈ 1.29 with E = 10 and the default margin of 2.
 *
 * Clocks (`leaseDriftClocks`): one voter, drawn from the seed, runs
 * `slowPpm` slow; the others run fast, each drawn in `fastPpm`. Every host's
 * timers run on its own clock, so the slow voter's ticks are the longest, by
 * a ratio checked at setup to stay below the bound with a safety margin.
 *
 * One round, again and again while the workload runs (every step reacts to
 * what the group does, checked after every event; timings from the seed):
 *
 * 1. Leadership goes to the slow voter S: while another voter leads, it is
 *    asked to transfer leadership to S (`transferLeader`, retried every
 *    1.5 s). S's own term never sent a `timeoutNow`, so its lease is live.
 * 2. Once S leads with an entry of its term committed, it is cut off from
 *    the other voters just before a check-quorum round (its election timer
 *    one tick short of the timeout), so it passes that round on the answers
 *    it had and leads on, cut off, for another election timeout of its slow
 *    ticks. The cut waits, within that tick, for a quorum to acknowledge an
 *    entry appended in it: the lease then runs its whole length from the
 *    cut's tick, while the followers last heard from S at the cut. No pause: its ticks keep running, only slower than the others'.
 *    Clients talk to hosts directly, so the cut keeps their link: each is
 *    pinned to S with probability 1/2 and only reads there, through the lease
 *    path, while S claims to lead.
 * 3. The others elect a successor as early as the lease allows: the moment a
 *    quorum of them (the old leader aside) no longer refuses votes (their
 *    stickiness, E of their faster ticks since they last heard from S, ran
 *    out), one of them campaigns (`campaign()`, again every 150 ms until a
 *    leader is elected). The clients not pinned are redirected to the
 *    successor and resend their calls there; once it has committed an entry
 *    of its term while S still leads, the pinned clients resend their reads.
 * 4. Once S steps down (or after `MAX_CUT_MS`), the clients are unpinned and
 *    the network heals; the next round starts 1–2 s later.
 *
 * The real lease (E − 1 − margin of S's ticks from the last acknowledgement)
 * ends before any voter's stickiness can, so S falls back to ReadIndex, which
 * no quorum answers. A lease that ignores the margin (E − 1 ticks) or that is
 * always valid answers S's pinned clients after the successor committed
 * writes, and the linearizability models refuse the stale reads.
 */
import type { PeerId, Random } from '@parley/interface';
import { between, type Simulation, violation } from '@parley/sim';
import { highestTermLeader } from '../raft/group.js';
import type { Client, LeaseDriftOptions } from './config.js';
import type { CoordHost } from './host.js';

/** Election timeout and lease margin of the coord hosts' Raft (the defaults: E = 10, margin ceil(E / 5)). */
const ELECTION_TICKS = 10;
const LEASE_MARGIN_TICKS = Math.ceil(ELECTION_TICKS / 5);
/** The assumption: the leader's tick period at most this many times any voter's. */
export const LEASE_DRIFT_BOUND = (ELECTION_TICKS - 1) / (ELECTION_TICKS - 1 - LEASE_MARGIN_TICKS);
/** The scenario keeps the ratio of tick periods at most this share of the bound. */
const SAFETY = 0.97;

export interface LeaseDriftClocks {
  /** Drift of each voter's clock (ppm), in the order of `voters`. */
  drifts: number[];
  slow: PeerId;
  /** Slow voter's tick period over the fastest voter's, as the simulated timers round them. */
  tickRatio: number;
}

/** A timer of `localMs` on a clock drifting `ppm` lasts this many global ms (as HostClock rounds it). */
function periodMs(localMs: number, ppm: number): number {
  return Math.ceil((localMs * 1_000_000) / (1_000_000 + ppm));
}

/**
 * Draws the voters' drifts: one slow voter, the others fast. Throws when the
 * options allow a tick-period ratio beyond `SAFETY` × the lease's bound
 * (outside the assumption, the real lease is allowed to fail).
 */
export function leaseDriftClocks(
  rng: Random,
  voters: readonly PeerId[],
  tickMs: number,
  opts: LeaseDriftOptions,
): LeaseDriftClocks {
  const worst = periodMs(tickMs, opts.slowPpm) / periodMs(tickMs, opts.fastPpm.max);
  if (!(opts.slowPpm <= 0 && opts.fastPpm.min >= 0 && opts.fastPpm.min <= opts.fastPpm.max)) {
    throw new RangeError('lease drift: need slowPpm ≤ 0 ≤ fastPpm.min ≤ fastPpm.max');
  }
  if (worst > SAFETY * LEASE_DRIFT_BOUND) {
    throw new RangeError(
      `lease drift: tick periods up to ${worst.toFixed(3)}× apart, beyond ${SAFETY} × the lease's bound ${LEASE_DRIFT_BOUND.toFixed(3)}×`,
    );
  }
  const slowAt = rng.int(voters.length);
  const drifts = voters.map((_, i) => (i === slowAt ? opts.slowPpm : between(rng, opts.fastPpm.min, opts.fastPpm.max)));
  const fastest = Math.max(...drifts);
  return {
    drifts,
    slow: voters[slowAt] as PeerId,
    tickRatio: periodMs(tickMs, opts.slowPpm) / periodMs(tickMs, fastest),
  };
}

/** How often the voters' wall clocks are stepped back to their offsets (see `resyncClocks`). */
export const RESYNC_MS = 500;

/**
 * ε for the TTL-aware models under `resyncClocks`: between two resyncs two clocks move apart
 * by at most the drift spread times `RESYNC_MS` (plus rounding), on top of their offsets.
 */
export function resyncedSkewBoundMs(offsets: readonly number[], drifts: readonly number[]): number {
  const offsetSpread = Math.max(0, ...offsets) - Math.min(0, ...offsets);
  const driftSpread = Math.max(0, ...drifts) - Math.min(0, ...drifts);
  return offsetSpread + Math.ceil((driftSpread * RESYNC_MS) / 1_000_000) + 2;
}

/**
 * Keeps the voters' wall clocks synchronized (an NTP step every `RESYNC_MS`, back to each
 * voter's constant offset) while their rates, hence their tick timers, stay apart: timers
 * run on the clock's rate, which a step does not change. Without it, a 10% drift would put
 * the clocks seconds apart within a run, beyond the TTLs (1–3 s) of the workload's leases
 * and locks, where the coord state machine promises nothing (ε ≪ TTL, docs/guarantees.md).
 */
export function resyncClocks(
  sim: Simulation,
  voters: readonly PeerId[],
  offsets: readonly number[],
  skewBoundMs: number,
): { maxSpreadMs: number } {
  const stats = { maxSpreadMs: 0 };
  // The TTL-aware models are only as right as ε: a spread beyond it fails the run.
  sim.invariant('coord/lease-drift-clock-bound', () => {
    if (stats.maxSpreadMs > skewBoundMs) {
      throw violation(
        'coord/lease-drift-clock-bound',
        `voters' clocks ${stats.maxSpreadMs} ms apart, beyond ε = ${skewBoundMs} ms`,
      );
    }
  });
  const step = () => {
    // Just before a resync the clocks are furthest apart: the largest difference between two
    // of them, or one of them and true time (what ε must bound).
    const skews = voters.map((id) => sim.host(id).clock.skewMs());
    stats.maxSpreadMs = Math.max(stats.maxSpreadMs, Math.max(0, ...skews) - Math.min(0, ...skews));
    for (const [i, id] of voters.entries()) {
      const off = (skews[i] as number) - (offsets[i] as number);
      if (off !== 0) sim.host(id).jumpClock(-off);
    }
    sim.schedule(RESYNC_MS, step);
  };
  sim.schedule(RESYNC_MS, step);
  return stats;
}

export interface LeaseDriftDeps {
  readonly sim: Simulation;
  readonly voters: readonly PeerId[];
  readonly app: (id: PeerId) => CoordHost | undefined;
  readonly clients: readonly Client[];
  readonly isRunning: () => boolean;
  readonly slow: PeerId;
  /** Sends a client's call in flight again, to the host `leaderGuess` picks (a client's retry). */
  readonly resend: (c: Client) => void;
}

export interface LeaseDriftStats {
  /** Leadership transfers to the slow voter asked for. */
  transfers: number;
  /** Rounds in which the slow voter, leading, was cut off. */
  cuts: number;
  /** Rounds in which a successor committed an entry of its term while the slow voter still led. */
  deposedWindows: number;
  /** Clients pinned to the cut-off leader. */
  clientsPinned: number;
  /** Campaigns started the moment a quorum of the other voters stopped being sticky. */
  earlyCampaigns: number;
}

/** The network heals after this long in step 3 even if the old leader still leads. */
const MAX_CUT_MS = 5_000;
/** A transfer not done by then is asked again. */
const TRANSFER_RETRY_MS = 1_000;
/** A campaign that did not make a leader is started again after this long. */
const CAMPAIGN_RETRY_MS = 150;

type Step = 'wait' | 'cut';

/** Installs the director (an invariant hook that never fails) and returns its counters. */
export function leaseDriftDirector(deps: LeaseDriftDeps): LeaseDriftStats {
  const { sim, voters, app, clients, isRunning, slow, resend } = deps;
  const rng = sim.random;
  const stats: LeaseDriftStats = {
    transfers: 0,
    cuts: 0,
    deposedWindows: 0,
    clientsPinned: 0,
    earlyCampaigns: 0,
  };
  let step: Step = 'wait';
  let nextAt = 1_000 + rng.int(1_000);
  let lastTransferAt = Number.NEGATIVE_INFINITY;
  let since = 0;
  let oldTerm = 0;
  let successor: { id: PeerId; term: number } | undefined;
  let windowSeen = false;
  let lastCampaignAt = Number.NEGATIVE_INFINITY;

  const endRound = (now: number) => {
    for (const c of clients) c.pinned = false;
    sim.network.heal();
    step = 'wait';
    nextAt = now + 500 + rng.int(1_000);
  };

  sim.invariant('coord/lease-drift-director', () => {
    const now = sim.nowMs();
    if (!isRunning()) return;
    if (step === 'wait') {
      if (now < nextAt) return;
      const l = highestTermLeader(voters, app);
      if (!l || sim.host(l.ctx.id).state !== 'up') return;
      if (l.ctx.id !== slow) {
        if (now - lastTransferAt < TRANSFER_RETRY_MS || app(slow) === undefined) return;
        if (sim.host(slow).state !== 'up') return;
        lastTransferAt = now;
        l.driver.transferLeader(slow);
        stats.transfers++;
        sim.trace(`lease-drift: ${l.ctx.id} asked to transfer leadership to ${slow}`);
        return;
      }
      const r = l.driver.probe;
      if (r.electionElapsed !== r.electionTimeout - 1 || !r.committedEntryInCurrentTerm()) return;
      // Cut once a quorum acknowledged an entry appended in the current tick: the lease then
      // runs its full length from this tick while the followers last heard from S just now.
      let fresh = 1;
      for (const [id, pr] of r.progress) if (id !== slow && pr.ackedTick === r.ticks) fresh++;
      if (fresh < Math.floor(voters.length / 2) + 1) return;
      oldTerm = r.term;
      successor = undefined;
      windowSeen = false;
      sim.network.isolate(slow);
      for (const c of clients) {
        if (rng.int(2) === 0) {
          c.pinned = true;
          stats.clientsPinned++;
        }
      }
      stats.cuts++;
      since = now;
      step = 'cut';
      sim.trace(
        `lease-drift: cut off ${slow} (term ${oldTerm}), ${clients.filter((c) => c.pinned).length} clients pinned`,
      );
      return;
    }
    // step 'cut'
    const st = app(slow)?.driver.status();
    const leads = st?.state === 'leader' && st.term === oldTerm;
    if (successor === undefined) {
      for (const v of voters) {
        const s = app(v)?.driver.status();
        if (v !== slow && s?.state === 'leader' && s.term > oldTerm) {
          successor = { id: v, term: s.term };
          // A redirect: the clients not pinned send their calls to the successor at once.
          for (const c of clients) {
            if (c.pinned) continue;
            c.target = v;
            if (c.call !== undefined && !c.call.waiting) resend(c);
          }
          sim.trace(`lease-drift: ${v} leads term ${s.term}; ${slow} ${leads ? 'still leads' : 'stepped down'}`);
        }
      }
    }
    if (successor === undefined && leads && now - lastCampaignAt >= CAMPAIGN_RETRY_MS) {
      // The earliest election the lease must survive: a voter campaigns the moment it and
      // enough others to make a quorum without the old leader no longer refuse votes (their
      // stickiness, E of their faster ticks since they last heard from it, has run out).
      const free = voters.filter((v) => {
        const r = v === slow ? undefined : app(v)?.driver.probe;
        return r !== undefined && r.state === 'follower' && !r.leaderSticky();
      });
      if (free.length >= Math.floor(voters.length / 2) + 1) {
        const v = free[rng.int(free.length)] as PeerId;
        app(v)?.driver.campaign();
        lastCampaignAt = now;
        stats.earlyCampaigns++;
      }
    }
    if (successor !== undefined && leads && !windowSeen) {
      const s = app(successor.id)?.driver.probe;
      if (s?.state === 'leader' && s.term === successor.term && s.committedEntryInCurrentTerm()) {
        windowSeen = true;
        stats.deposedWindows++;
        // The pinned clients ask again (a read left waiting once the real lease ran out).
        for (const c of clients) if (c.pinned && c.call?.viaRead === true) resend(c);
      }
    }
    if (leads && now - since < MAX_CUT_MS) {
      // A pinned client moves to the old leader between two calls.
      for (const c of clients) if (c.pinned && c.call === undefined) c.target = slow;
      return;
    }
    if (!leads && successor === undefined && now - since < MAX_CUT_MS) return;
    endRound(now);
  });
  return stats;
}
