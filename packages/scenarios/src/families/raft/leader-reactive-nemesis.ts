/**
 * A nemesis that reacts to leadership instead of a clock: after every event
 * it looks at the Raft group, and when a member has just become leader, or an
 * entry of a leader has just reached a quorum of voters (the index a quorum
 * holds moved past the leader's commit index), it may — by a coin drawn from
 * the seed — cut that leader off at once: alone, or (a quorum reaction, half
 * of the time) with its closest follower, the one with the highest match.
 * Each cut first reconnects every host an earlier cut separated, and heals
 * after a drawn while unless a later cut replaced it.
 *
 * No step is scripted: which leader is cut, when, with whom and for how long
 * all come from the seed. But the cuts land at the moments that matter for
 * Figure 8 of the Raft paper (§5.4.2): a leader cut off with a follower
 * strands entries of its term on a minority; a new leader cut off the moment
 * it leads strands its no-op at the same index; the next cut reconnects the
 * first pair, so one of them may lead again and bring the old entries to a
 * quorum; a cut at that moment, with the follower that also holds the new
 * leader's own entry, hands the group back to the second leader.
 * `raft-5-figure8-random` runs it (docs/simulation.md).
 */
import type { PeerId } from '@parley/interface';
import type { RaftProbe } from '@parley/raft';
import type { Simulation } from '@parley/sim';
import { between } from '@parley/sim';
import type { RaftMember } from './group.js';

export interface LeaderReactiveOptions {
  /** Probability to cut off a member the moment it becomes leader (alone). */
  cutNewLeader: number;
  /**
   * Probability, each time an entry of a leader reaches a quorum of voters (the index a
   * quorum holds moves: the moment it may commit), to cut it off: alone, or half of the time
   * with its closest follower.
   */
  cutOnQuorum: number;
  /** How long a cut lasts unless a later one replaces it. */
  durationMs: { min: number; max: number };
}

/** Leaders (id@term) remembered, at most: older ones are forgotten first. */
const MAX_LEADERS_SEEN = 1_000;

export class LeaderReactiveNemesis {
  readonly stats = { cuts: 0, newLeaderCuts: 0, quorumCuts: 0 };
  private stopped = false;
  /** Index a quorum held and commit index, last seen per leader (id@term). */
  private readonly quorumSeen = new Map<string, { held: number; commit: number }>();
  /** Bumped by every cut: a heal timer only heals its own cut. */
  private generation = 0;

  constructor(
    private readonly sim: Simulation,
    private readonly ids: readonly PeerId[],
    private readonly app: (id: PeerId) => RaftMember | undefined,
    private readonly options: LeaderReactiveOptions,
  ) {}

  /** Installs the hook that runs after every event. */
  start(): this {
    this.sim.invariant('nemesis/leader-reactive', () => this.observe());
    return this;
  }

  /** Stops reacting (the runner's `sim.calm()` heals what is still cut). */
  stop(): void {
    this.stopped = true;
  }

  private chance(p: number): boolean {
    return this.sim.random.int(1_000_000) < p * 1_000_000;
  }

  /** The highest index a quorum of voters holds, by the leader's progress. */
  private quorumMatch(r: RaftProbe): number {
    const matches: number[] = [];
    for (const v of r.voters) matches.push(r.progress.get(v)?.match ?? 0);
    matches.sort((a, b) => b - a);
    return matches[Math.floor(r.voters.size / 2)] ?? 0;
  }

  private observe(): void {
    if (this.stopped) return;
    for (const id of this.ids) {
      const r = this.app(id)?.driver.probe;
      if (r?.state !== 'leader' || this.sim.host(id).state !== 'up') continue;
      const key = `${id}@${r.term}`;
      const seen = this.quorumSeen.get(key);
      const held = this.quorumMatch(r);
      if (seen === undefined) {
        if (this.quorumSeen.size >= MAX_LEADERS_SEEN) {
          const oldest = this.quorumSeen.keys().next().value as string;
          this.quorumSeen.delete(oldest);
        }
        this.quorumSeen.set(key, { held, commit: r.committed });
        if (this.chance(this.options.cutNewLeader)) {
          this.stats.newLeaderCuts++;
          this.cut([id]);
          return;
        }
        continue;
      }
      // Only an entry beyond what the leader had committed: a new leader learning its
      // followers' matches moves the quorum index through entries committed long ago.
      if (held <= seen.held || held <= seen.commit) {
        seen.held = Math.max(seen.held, held);
        seen.commit = r.committed;
        continue;
      }
      seen.held = held;
      seen.commit = r.committed;
      if (this.chance(this.options.cutOnQuorum)) {
        const side = [id];
        if (this.sim.random.int(2) === 0) {
          // The follower closest to the leader (highest match; ties drawn): the one most
          // likely to hold the leader's newest entries, so that the rest hold none of them.
          let best: PeerId[] = [];
          let bestMatch = -1;
          for (const x of this.ids) {
            if (x === id) continue;
            const m = r.progress.get(x)?.match ?? -1;
            if (m > bestMatch) {
              best = [x];
              bestMatch = m;
            } else if (m === bestMatch) best.push(x);
          }
          side.push(best[this.sim.random.int(best.length)] as PeerId);
        }
        this.stats.quorumCuts++;
        this.cut(side);
        return;
      }
    }
  }

  /** Replaces every partition by one that separates `side` from the rest. */
  private cut(side: PeerId[]): void {
    const net = this.sim.network;
    net.heal();
    net.partition(side);
    this.stats.cuts++;
    const gen = ++this.generation;
    const d = this.options.durationMs;
    this.sim.schedule(
      between(this.sim.random, d.min, d.max),
      () => {
        if (!this.stopped && gen === this.generation) net.heal();
      },
      'nemesis-undo',
    );
  }
}
