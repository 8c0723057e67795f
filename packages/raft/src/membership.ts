import { InvalidArgumentError, type PeerId, type RaftEntry } from '@parley/interface';
import { encodeConfChange } from './confchange.js';
import type { Progress } from './progress.js';
import type { ConfChange, Status } from './types.js';

/**
 * The conf changes that bootstrap a new cluster, voters then learners, each
 * sorted, and their committed entries at term 1 (indexes 1..n).
 */
export function bootstrapEntries(voters: PeerId[], learners: PeerId[]): { changes: ConfChange[]; ents: RaftEntry[] } {
  const changes: ConfChange[] = [
    ...[...new Set(voters)].sort().map((node): ConfChange => ({ type: 'addVoter', node })),
    ...[...new Set(learners)]
      .filter((l) => !voters.includes(l))
      .sort()
      .map((node): ConfChange => ({ type: 'addLearner', node })),
  ];
  const ents: RaftEntry[] = changes.map((cc, i) => ({
    term: 1,
    index: i + 1,
    type: 'conf',
    data: encodeConfChange(cc),
  }));
  return { changes, ents };
}

/** Refuses a proposed conf change that would leave no voter. */
export function validateConfChange(cc: ConfChange, voters: ReadonlySet<PeerId>): void {
  if (cc.type === 'removeNode' || cc.type === 'addLearner') {
    if (voters.has(cc.node) && voters.size === 1) {
      throw new InvalidArgumentError('raft: cannot remove the last voter', { node: cc.node });
    }
  }
}

/** Applies `cc` to the member sets, never dropping the last voter. */
export function applyToMembers(cc: ConfChange, voters: Set<PeerId>, learners: Set<PeerId>): void {
  const node = cc.node;
  switch (cc.type) {
    case 'addVoter':
      learners.delete(node);
      voters.add(node);
      break;
    case 'addLearner':
      if (voters.has(node) && voters.size === 1) break; // never drop the last voter
      voters.delete(node);
      learners.add(node);
      break;
    case 'removeNode':
      if (voters.has(node) && voters.size === 1) break;
      voters.delete(node);
      learners.delete(node);
      break;
  }
}

/** A leader's per-peer replication state for `status()`, by peer id. */
export function describeProgress(progress: ReadonlyMap<PeerId, Progress>): NonNullable<Status['progress']> {
  const out: NonNullable<Status['progress']> = {};
  for (const [id, pr] of [...progress].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    out[id] = {
      match: pr.match,
      next: pr.next,
      state: pr.state,
      learner: pr.learner,
      recentActive: pr.recentActive,
      inflight: pr.inflights.count,
    };
  }
  return out;
}
