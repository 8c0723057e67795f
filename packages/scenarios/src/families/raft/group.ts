import type { RaftClusterView, RaftNodeView } from '@parley/check';
import type { PeerId } from '@parley/interface';
import type { RaftDriver } from '@parley/raft';

/** A simulated host running one Raft member (the raft-* and coord-* hosts). */
export interface RaftMember {
  readonly driver: RaftDriver;
}

/** The member that believes it leads in the highest term, if any. */
export function highestTermLeader<H extends RaftMember>(
  ids: readonly PeerId[],
  app: (id: PeerId) => H | undefined,
): H | undefined {
  let best: H | undefined;
  for (const id of ids) {
    const a = app(id);
    if (!a) continue;
    const st = a.driver.status();
    if (st.state === 'leader' && (!best || st.term > best.driver.status().term)) best = a;
  }
  return best;
}

/**
 * A Raft group has converged when its leader has committed an entry of its own
 * term and every member follows that leader in that term and has applied
 * everything it committed. Following matters: a leader paused through a
 * partition can wake still believing it leads an old term until it hears from
 * the others.
 */
export function raftGroupConverged(
  leader: RaftMember,
  members: readonly PeerId[],
  app: (id: PeerId) => RaftMember | undefined,
): boolean {
  const st = leader.driver.status();
  if (leader.driver.probe.termAt(st.commit) !== st.term) return false;
  for (const id of members) {
    const a = app(id);
    if (!a) return false;
    const ms = a.driver.status();
    if (ms.term !== st.term || ms.lead !== leader.driver.id || a.driver.appliedIndex < st.commit) return false;
  }
  return true;
}

/** The checkers' neutral view of a Raft group (a down host is marked `down`). */
export function raftClusterView(ids: readonly PeerId[], app: (id: PeerId) => RaftMember | undefined): RaftClusterView {
  return {
    nodes: ids.map((id): RaftNodeView => {
      const a = app(id);
      if (!a) {
        return {
          id,
          term: 0,
          isLeader: false,
          commitIndex: 0,
          firstIndex: 1,
          lastIndex: 0,
          termAt: () => 0,
          down: true,
        };
      }
      const raft = a.driver.probe;
      const log = raft;
      return {
        id,
        term: raft.term,
        isLeader: raft.state === 'leader',
        commitIndex: log.committed,
        lastApplied: a.driver.appliedIndex,
        firstIndex: log.firstIndex(),
        lastIndex: log.lastIndex(),
        termAt: (i) => log.termAt(i) ?? -1,
        entryAt: (i) => log.entryAt(i),
        down: false,
      };
    }),
  };
}
