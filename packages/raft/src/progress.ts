/**
 * The leader's view of one follower: how far its log matches, what to send
 * next, and a bounded window of append messages in flight.
 */

/** A ring of (last index, bytes) of append messages sent and not yet acknowledged. */
export class Inflights {
  private readonly indexes: number[];
  private readonly sizes: number[];
  private start = 0;
  count = 0;
  bytes = 0;

  constructor(
    readonly capacity: number,
    readonly maxBytes: number,
  ) {
    this.indexes = new Array<number>(capacity).fill(0);
    this.sizes = new Array<number>(capacity).fill(0);
  }

  add(index: number, bytes: number): void {
    if (this.full()) throw new Error('raft: inflights window overflow');
    const slot = (this.start + this.count) % this.capacity;
    this.indexes[slot] = index;
    this.sizes[slot] = bytes;
    this.count++;
    this.bytes += bytes;
  }

  /** Frees every message whose last index is ≤ `index`. */
  freeLE(index: number): void {
    while (this.count > 0 && (this.indexes[this.start] as number) <= index) {
      this.bytes -= this.sizes[this.start] as number;
      this.start = (this.start + 1) % this.capacity;
      this.count--;
    }
    if (this.count === 0) this.start = 0;
  }

  /** Frees the oldest message (it was probably lost) so one more append can go out. */
  freeFirstOne(): void {
    if (this.count === 0) return;
    this.freeLE(this.indexes[this.start] as number);
  }

  full(): boolean {
    return this.count >= this.capacity || (this.maxBytes > 0 && this.bytes >= this.maxBytes);
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
    this.bytes = 0;
  }
}

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** Probe state: one append is outstanding; wait for its answer or a heartbeat response. */
  probeSent = false;
  /** Snapshot state: index of the snapshot being sent and bytes acknowledged so far. */
  pendingSnapshot = 0;
  snapshotOffset = 0;
  /** Whether a chunk acknowledgement arrived since the last heartbeat (else the chunk is resent). */
  snapshotAcked = false;
  /** Set by any message from the peer; reset by the check-quorum sweep. */
  recentActive = false;
  /**
   * Lease reads: a lower bound, in the leader's ticks, of when the peer last
   * received a message of this term from the leader (-Infinity: unknown).
   */
  ackedTick = Number.NEGATIVE_INFINITY;
  /** Highest commit index told to the peer. */
  sentCommit = 0;
  readonly inflights: Inflights;

  constructor(
    next: number,
    public learner: boolean,
    maxInflightMsgs: number,
    maxInflightBytes: number,
  ) {
    this.next = next;
    this.inflights = new Inflights(maxInflightMsgs, maxInflightBytes);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotOffset = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === 'snapshot') {
      const pending = this.pendingSnapshot;
      this.resetState('probe');
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState('probe');
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshotIndex;
  }

  /** Records an append of `entries` entries ending at `lastIndex`. */
  sentEntries(count: number, lastIndex: number, bytes: number): void {
    if (this.state === 'replicate') {
      if (count > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex, bytes);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  /** An accepted append up to `n`; returns false when stale. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /**
   * A rejected append at `rejected`, with the follower's hint `matchHint`;
   * returns false when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }
}
