import type { PeerId, RaftEntry } from '@parley/interface';
import type { Raft } from './raft.js';

/**
 * Raft's safety properties (Figure 3 of the paper), checked from the outside
 * on a set of running members. Used by the randomized tests and the
 * simulator scenarios.
 *
 * - Election safety: at most one leader per term.
 * - Log matching: two logs with an entry of the same index and term agree on
 *   every entry up to it.
 * - Leader completeness: a new leader's log holds every entry committed before.
 * - State machine safety: no two members apply different entries at one index.
 */
export interface SafetyMember {
  id: PeerId;
  raft: Raft;
  /** Down members are skipped by the log checks (their state is frozen anyway). */
  down: boolean;
}

export interface Violation {
  invariant: 'election-safety' | 'log-matching' | 'leader-completeness' | 'state-machine-safety';
  message: string;
}

function key(e: RaftEntry): string {
  let s = `${e.term}:${e.type}:`;
  for (let i = 0; i < e.data.length; i++) s += String.fromCharCode(e.data[i] as number);
  return s;
}

export class RaftSafetyChecker {
  readonly violations: Violation[] = [];
  private readonly leaders = new Map<number, PeerId>();
  /** index → key of the entry applied there (by anyone). */
  private readonly applied = new Map<number, string>();
  private readonly appliedTerms = new Map<number, number>();
  private maxAppliedIndex = 0;

  private fail(invariant: Violation['invariant'], message: string): void {
    if (this.violations.length < 100) this.violations.push({ invariant, message });
  }

  /** Call for every committed entry a member applies. */
  onApply(node: PeerId, e: RaftEntry): void {
    const k = key(e);
    const prev = this.applied.get(e.index);
    if (prev === undefined) {
      this.applied.set(e.index, k);
      this.appliedTerms.set(e.index, e.term);
      if (e.index > this.maxAppliedIndex) this.maxAppliedIndex = e.index;
    } else if (prev !== k) {
      this.fail('state-machine-safety', `${node} applied ${e.term}/${e.index} but another member applied ${prev}`);
    }
  }

  /** Call after every step of the system. */
  observe(members: Iterable<SafetyMember>): void {
    for (const m of members) {
      if (m.down || m.raft.state !== 'leader') continue;
      const term = m.raft.term;
      const known = this.leaders.get(term);
      if (known === undefined) {
        this.leaders.set(term, m.id);
        this.checkCompleteness(m);
      } else if (known !== m.id) {
        this.fail('election-safety', `term ${term} has two leaders: ${known} and ${m.id}`);
      }
    }
  }

  private checkCompleteness(m: SafetyMember): void {
    const log = m.raft.log;
    const first = log.firstIndex();
    for (const [index, term] of this.appliedTerms) {
      if (index < first) continue; // compacted into the leader's snapshot
      const t = log.maybeTerm(index);
      if (t !== term) {
        this.fail(
          'leader-completeness',
          `new leader ${m.id} (term ${m.raft.term}) lacks committed entry ${term}/${index} (has ${t ?? 'none'})`,
        );
        return;
      }
    }
  }

  /** Pairwise log matching over the overlap of every two live logs (costly: call periodically). */
  checkLogMatching(members: Iterable<SafetyMember>): void {
    const live = [...members].filter((m) => !m.down);
    for (let i = 0; i < live.length; i++) {
      for (let j = i + 1; j < live.length; j++) {
        const a = (live[i] as SafetyMember).raft.log;
        const b = (live[j] as SafetyMember).raft.log;
        const lo = Math.max(a.firstIndex(), b.firstIndex());
        const hi = Math.min(a.lastIndex(), b.lastIndex());
        if (lo > hi) continue;
        const ea = a.slice(lo, hi + 1);
        const eb = b.slice(lo, hi + 1);
        // Find the highest index where both terms agree; everything below must be identical.
        let top = -1;
        for (let k = ea.length - 1; k >= 0; k--) {
          if ((ea[k] as RaftEntry).term === (eb[k] as RaftEntry).term) {
            top = k;
            break;
          }
        }
        for (let k = 0; k <= top; k++) {
          if (key(ea[k] as RaftEntry) !== key(eb[k] as RaftEntry)) {
            this.fail(
              'log-matching',
              `${(live[i] as SafetyMember).id} and ${(live[j] as SafetyMember).id} agree at ${(ea[top] as RaftEntry).term}/${lo + top} but differ at ${lo + k}`,
            );
            return;
          }
        }
      }
    }
  }

  highestApplied(): number {
    return this.maxAppliedIndex;
  }
}
