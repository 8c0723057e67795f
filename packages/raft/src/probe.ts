/**
 * A read-only view of one Raft member's volatile state, for the simulator's
 * directors and checks (who leads, what is committed, how far each follower
 * has acknowledged, how far the election timer ran) without a handle on the
 * member itself: nothing here can change it.
 */
import type { PeerId, RaftEntry } from '@parley/interface';
import type { Raft } from './raft.js';
import type { StateType } from './types.js';

/** What the leader knows of one member's log. */
export interface ProgressView {
  /** Highest index known to be in that member's log. */
  readonly match: number;
  /** Next index the leader sends it. */
  readonly next: number;
  /** The leader's tick at that member's last acknowledgement (for lease checks). */
  readonly ackedTick: number;
}

/** The read-only view of one member (`RawNode.probe`, `RaftDriver.probe`). */
export class RaftProbe {
  readonly #raft: Raft;

  constructor(raft: Raft) {
    this.#raft = raft;
  }

  get id(): PeerId {
    return this.#raft.id;
  }
  get state(): StateType {
    return this.#raft.state;
  }
  get term(): number {
    return this.#raft.term;
  }
  get lead(): PeerId {
    return this.#raft.lead;
  }
  get voters(): ReadonlySet<PeerId> {
    return this.#raft.voters;
  }
  /** The leader's view of every member's log (empty on a follower). */
  get progress(): ReadonlyMap<PeerId, ProgressView> {
    return this.#raft.progress;
  }
  /** Ticks since this member started. */
  get ticks(): number {
    return this.#raft.ticks;
  }
  get electionElapsed(): number {
    return this.#raft.electionElapsed;
  }
  get electionTimeout(): number {
    return this.#raft.electionTimeout;
  }
  /** Highest committed index. */
  get committed(): number {
    return this.#raft.log.committed;
  }
  firstIndex(): number {
    return this.#raft.log.firstIndex();
  }
  lastIndex(): number {
    return this.#raft.log.lastIndex();
  }
  /** Term of the entry at `index`, or undefined when the log no longer (or does not yet) hold it. */
  termAt(index: number): number | undefined {
    return this.#raft.log.maybeTerm(index);
  }
  /** The entry at `index`, or undefined when the log no longer (or does not yet) hold it. */
  entryAt(index: number): RaftEntry | undefined {
    const log = this.#raft.log;
    if (index < log.firstIndex() || index > log.lastIndex()) return undefined;
    return log.slice(index, index + 1)[0];
  }
  /** Whether this member still hears from a leader recently enough to refuse a vote. */
  leaderSticky(): boolean {
    return this.#raft.leaderSticky();
  }
  /** Whether the leader has committed an entry of its own term (reads may be served). */
  committedEntryInCurrentTerm(): boolean {
    return this.#raft.committedEntryInCurrentTerm();
  }
}
