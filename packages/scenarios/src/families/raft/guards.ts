/**
 * Guard counters of a Raft group: how often a run reached the states that
 * Raft's rarely-hit guards exist for. A sweep whose runs never reach one
 * cannot tell a correct guard from a missing one (see `guard.*` metrics in
 * docs/simulation.md).
 *
 * - `guard.oldTermCommitByCount`: a leader had an entry of an earlier term,
 *   beyond its commit index, on a quorum of voters — the moment §5.4.2 of
 *   the Raft paper forbids committing it by counting replicas (counted once
 *   per leader, term and index).
 */
import type { PeerId } from '@parley/interface';
import type { RaftMember } from './group.js';

/** Distinct (leader, term, index) situations remembered, at most. */
const MAX_SEEN = 10_000;

export class RaftGuardWatch {
  oldTermCommitByCount = 0;
  private readonly seen = new Set<string>();

  /** Call after every event. */
  observe(ids: readonly PeerId[], app: (id: PeerId) => RaftMember | undefined): void {
    for (const id of ids) {
      const r = app(id)?.driver.probe;
      if (r?.state !== 'leader') continue;
      const matches: number[] = [];
      for (const v of r.voters) matches.push(r.progress.get(v)?.match ?? 0);
      if (matches.length === 0) continue;
      matches.sort((a, b) => b - a);
      const mci = matches[Math.floor(r.voters.size / 2)] as number;
      if (mci <= r.committed) continue;
      const t = r.termAt(mci);
      if (t === undefined || t === r.term) continue;
      const key = `${id}@${r.term}:${mci}`;
      if (this.seen.has(key) || this.seen.size >= MAX_SEEN) continue;
      this.seen.add(key);
      this.oldTermCommitByCount++;
    }
  }
}
