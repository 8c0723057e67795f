/**
 * Pipelined lock releases (`locks(ns).release(key, { pipelined: true })`)
 * not yet answered, per (namespace, key, owner), shared by every
 * `locks(ns)` face of a node. The release is sent at once and its caller
 * need not wait for it: an acquire of the same lock by the same owner is
 * sent right behind it, on the same node, so the leader normally applies
 * the release first and both share a log round. When the acquire reaches the
 * state machine first anyway (the release's attempt was lost and retried,
 * say), it is refused with `lock_held` naming its own owner, which changed
 * nothing (with `wait` it queues behind its own grant instead, and is
 * granted when the release applies); the face then waits for the release to
 * settle and sends the acquire once more. That second send follows a
 * definite refusal, so it is never a blind retry.
 *
 * The map holds one entry per release in flight, and every release is a
 * strong call the session pool bounds (`maxQueuedCalls`), so it is bounded
 * too; an entry leaves when its release settles.
 */
export class PipelinedReleases {
  private readonly pending = new Map<string, Promise<unknown>>();
  /** Acquires refused because they overtook their owner's pipelined release, and sent again. */
  overtaken = 0;

  /** Releases sent and not yet settled (observability, tests). */
  get size(): number {
    return this.pending.size;
  }

  /** Records `release` as the latest pipelined release of (namespace, key, owner) until it settles. */
  track(namespace: string, key: string, owner: string, release: Promise<unknown>): void {
    const id = pairId(namespace, key, owner);
    const before = this.pending.get(id);
    // Two releases of one lock by one owner in flight (two grants, one stale): an acquire waits for both.
    const entry = before ? Promise.allSettled([before, release]) : release.then(noop, noop);
    this.pending.set(id, entry);
    entry.then(() => {
      if (this.pending.get(id) === entry) this.pending.delete(id);
    });
  }

  /** Settles when every pipelined release of (namespace, key, owner) in flight has; undefined if none is. */
  settled(namespace: string, key: string, owner: string): Promise<unknown> | undefined {
    // Every acquire asks: with nothing in flight (the common case) no key is built.
    if (this.pending.size === 0) return undefined;
    return this.pending.get(pairId(namespace, key, owner));
  }
}

function pairId(namespace: string, key: string, owner: string): string {
  return JSON.stringify([namespace, key, owner]);
}

function noop(): void {}
