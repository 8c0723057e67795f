import type { PeerId, RaftEntry } from '@parley/interface';
import type { RaftLog } from './log.js';

/** Votes needed among `voters` voters. */
export function quorumOf(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/** Counts the (pre-)votes of current voters: won on a quorum of grants, lost once a quorum is out of reach. */
export function tallyVotes(
  votes: ReadonlyMap<PeerId, boolean>,
  voters: ReadonlySet<PeerId>,
): 'won' | 'lost' | 'pending' {
  let yes = 0;
  let no = 0;
  for (const [id, g] of votes) {
    if (!voters.has(id)) continue;
    if (g) yes++;
    else no++;
  }
  const q = quorumOf(voters.size);
  if (yes >= q) return 'won';
  if (no > voters.size - q) return 'lost';
  return 'pending';
}

/** Whether a committed conf entry after index `applied` awaits application (reading `maxBytes` per slice). */
export function hasUnappliedConfChanges(log: RaftLog, applied: number, maxBytes: number): boolean {
  let lo = applied + 1;
  if (log.committed < lo) return false;
  const hi = log.committed + 1;
  while (lo < hi) {
    let ents: RaftEntry[];
    try {
      ents = log.slice(lo, hi, maxBytes);
    } catch {
      return false;
    }
    for (const e of ents) if (e.type === 'conf') return true;
    lo += ents.length;
  }
  return false;
}
