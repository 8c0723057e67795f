/**
 * The stale-leader director of `coord-5-stale-reads`: a leader that wakes up
 * from a process pause cut off from the other voters still believes it leads,
 * while they elected a successor that committed writes in the meantime; some
 * clients keep their link to it and read there.
 *
 * One round, again and again while the workload runs (every step reacts to
 * what the group does, checked after every event; timings are drawn from the
 * seed):
 *
 * 1. A leader L that has committed an entry of its term is suspended just
 *    before a check-quorum round (its election timer one tick short of the
 *    timeout) and cut off from every other voter. Suspended, not just paused:
 *    its clock stands still too, as in a suspended VM, so on waking its Raft
 *    driver sees no tick periods pass (a pause with the clock running is
 *    counted, and the leader would step down at once: `coord-5-stale-lease-reads`). Clients talk to hosts directly, so
 *    the cut keeps their link to L.
 * 2. The others elect a successor, which commits client writes (at least
 *    `writesAfterElection` commands applied beyond its election).
 * 3. L resumes, still cut off, its clock behind by the length of the
 *    suspension. Its ticks stood still during the pause: it
 *    passes that check-quorum round on the answers it had before the pause
 *    and leads on, deposed, for another election timeout. Each client is now
 *    pinned to L with probability 1/2 (a client that still holds L as the
 *    leader): it moves to L after its call in flight, and only reads, through
 *    ReadIndex, until the round ends. None of those reads may be stale.
 * 4. Once L steps down (or after `maxStaleMs`), its clock is stepped forward
 *    to the others' again (as NTP would) and the network heals; the next
 *    round starts 1–2.5 s later.
 *
 * A correct ReadIndex never answers in step 3 (the heartbeat round that
 * confirms leadership gets no answer from a quorum); a leader that answers
 * without that round serves the state from before the pause, and the
 * linearizability models catch the stale read. With `clockRunsInPause`, L
 * is paused with its clock running instead (a GC pause, `SIGSTOP`): the
 * driver counts the tick periods that passed, so L loses its lease and steps
 * down on waking — what `coord-5-stale-lease-reads` checks with lease reads.
 */
import type { PeerId } from '@parley/interface';
import type { Simulation } from '@parley/sim';
import { highestTermLeader } from '../raft/group.js';
import type { Client } from './config.js';
import type { CoordHost } from './host.js';

export interface StaleLeaderDeps {
  readonly sim: Simulation;
  readonly voters: readonly PeerId[];
  readonly app: (id: PeerId) => CoordHost | undefined;
  readonly clients: readonly Client[];
  readonly isRunning: () => boolean;
  /** The leader's clock runs on while it is paused (default: it stands still, a suspension). */
  readonly clockRunsInPause?: boolean;
}

export interface StaleLeaderStats {
  /** Rounds in which a leader was paused and cut off. */
  pauses: number;
  /** Rounds in which it resumed deposed (a successor had committed writes) and still believed it led. */
  staleWindows: number;
  /** Clients routed to the deposed leader. */
  clientsRedirected: number;
}

/** Commands a successor must apply beyond its election before the old leader resumes. */
const WRITES_AFTER_ELECTION = 10;
/** The old leader resumes after this long even if no successor committed anything. */
const MAX_PAUSE_MS = 6_000;
/** The network heals after this long in step 3 even if the old leader still leads. */
const MAX_STALE_MS = 4_000;

type Step = 'wait' | 'paused' | 'stale';

/** Installs the director (an invariant hook that never fails) and returns its counters. */
export function staleLeaderDirector(deps: StaleLeaderDeps): StaleLeaderStats {
  const { sim, voters, app, clients, isRunning } = deps;
  const rng = sim.random;
  const stats: StaleLeaderStats = { pauses: 0, staleWindows: 0, clientsRedirected: 0 };
  let step: Step = 'wait';
  let nextAt = 1_500 + rng.int(1_000);
  let since = 0;
  let old: PeerId | undefined;
  let oldTerm = 0;
  /** Successor (id and term) and the index it had applied when first seen leading. */
  let successor: { id: PeerId; term: number; appliedAt: number } | undefined;

  /** How far the suspended leader's clock was set back (stepped forward again at the heal). */
  let clockBehindMs = 0;
  const heal = () => {
    if (clockBehindMs > 0 && old !== undefined) sim.host(old).jumpClock(clockBehindMs);
    clockBehindMs = 0;
    sim.network.heal();
    step = 'wait';
    nextAt = sim.nowMs() + 1_000 + rng.int(1_500);
  };

  sim.invariant('coord/stale-leader-director', () => {
    const now = sim.nowMs();
    if (!isRunning()) return;
    switch (step) {
      case 'wait': {
        if (now < nextAt) return;
        const l = highestTermLeader(voters, app);
        const r = l?.driver.probe;
        if (!l || !r || sim.host(l.ctx.id).state !== 'up') return;
        if (r.electionElapsed !== r.electionTimeout - 1 || !r.committedEntryInCurrentTerm()) return;
        old = l.ctx.id;
        oldTerm = r.term;
        successor = undefined;
        sim.host(old).pause();
        sim.network.isolate(old);
        sim.trace(`stale-leader: paused and cut off ${old} (term ${oldTerm})`);
        stats.pauses++;
        step = 'paused';
        since = now;
        return;
      }
      case 'paused': {
        const o = old as PeerId;
        if (successor === undefined) {
          for (const v of voters) {
            const a = app(v);
            const st = a?.driver.status();
            if (a && st?.state === 'leader' && st.term > oldTerm) {
              successor = { id: v, term: st.term, appliedAt: a.driver.appliedIndex };
            }
          }
        }
        const s = successor === undefined ? undefined : app(successor.id);
        const committed =
          s !== undefined &&
          successor !== undefined &&
          s.driver.status().term === successor.term &&
          s.sm.applied.index >= successor.appliedAt + WRITES_AFTER_ELECTION;
        if (!committed && now - since < MAX_PAUSE_MS) return;
        sim.host(o).resume();
        if (deps.clockRunsInPause !== true) {
          // Suspended: its clock stood still while time ran on.
          clockBehindMs = now - since;
          sim.host(o).jumpClock(-clockBehindMs);
        }
        const r = app(o)?.driver.probe;
        if (committed && r?.state === 'leader' && r.term === oldTerm) {
          stats.staleWindows++;
          for (const c of clients) {
            if (rng.int(2) === 0) {
              c.pinned = true;
              stats.clientsRedirected++;
            }
          }
        }
        sim.trace(`stale-leader: resumed ${o}${committed ? ' after its successor committed' : ''}`);
        step = 'stale';
        since = now;
        return;
      }
      case 'stale': {
        const st = app(old as PeerId)?.driver.status();
        const leads = st?.state === 'leader' && st.term === oldTerm;
        if (leads && now - since < MAX_STALE_MS) {
          // A pinned client moves to the old leader between two calls (an answer in flight
          // elsewhere is routed by its target).
          for (const c of clients) if (c.pinned && c.call === undefined) c.target = old;
          return;
        }
        for (const c of clients) c.pinned = false;
        heal();
        return;
      }
    }
  });
  return stats;
}
