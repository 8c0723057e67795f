/**
 * The delivery bound of counter convergence under tombstone GC, watched from
 * the history of a `crdt-*` run.
 *
 * @parley/crdt promises that replicas with equal digests read the same
 * counters provided that a counter increment made by a replica that had not
 * seen a write superseding its incarnation (a delete of the key, or a newer
 * incarnation of the counter) does not reach some replica only after that
 * write's grace period (crdt INTERNALS §4, "What replicas agree on,
 * precisely"). Such an increment loses by LWW wherever the superseding write
 * is still held, and is installed where it was already collected: that
 * replica alone reads the counter. No bounded-memory GC can tell the two
 * cases apart, so the crdt states the bound; a deployment keeps it with a
 * grace period of 30 days and the node's out-of-contact rule.
 *
 * `crdt-gc` breaks the bound on purpose (a 2 s grace period, links held and
 * replicas isolated for up to 6 s) to deliver old deltas after collection.
 * This tracker records exactly when an increment crossed the bound, so the
 * scenario can tell a divergence its fault model caused on that key from one
 * the crdt must not have: only keys where the tracker saw an increment cross
 * the bound are excused, and every other key is judged as before.
 */
import { compareHlc, type DotRanges, type Hlc, type KeyState, type NamespaceReplica } from '@parley/crdt';

/** The shortest TTL a write may carry (1 s). */
const MIN_TTL_MS = 1_000;

interface Dot {
  readonly node: string;
  readonly seq: number;
}

/** A write that supersedes every incarnation of its key with a lower position. */
interface Superseding {
  /** A tombstone's stamp, or the base of the incarnation a counter increment belongs to. */
  readonly position: Hlc;
  readonly dot: Dot;
  /** The earliest physical ms at which the time rule may collect the state this write made. */
  readonly collectFromMs: number;
}

/** An increment made by a replica that had not seen a write superseding its incarnation. */
interface UnawareIncrement {
  readonly key: string;
  /** The incarnation it belongs to. */
  readonly base: Hlc;
  readonly dot: Dot;
  /** From this physical ms on, some superseding write it had not seen may be collected. */
  readonly boundMs: number;
  /** The superseding writes it had not seen. */
  readonly unseen: readonly Dot[];
  /** Replicas that have not installed it yet. */
  readonly pending: Set<string>;
}

/** What the tracker asks of a replica: whether it has seen a dot, and its state of a key. */
export interface TrackedReplica {
  readonly replicaId: string;
  seen(node: string, seq: number): boolean;
  stateOf(key: string): KeyState | undefined;
}

export class DeliveryBoundTracker {
  private readonly writes = new Map<string, Superseding[]>();
  private readonly unaware: UnawareIncrement[] = [];
  /** Per key: the incarnations (base) each replica installed beyond the bound. */
  private readonly crossed = new Map<
    string,
    Array<{ readonly replica: string; readonly base: Hlc; readonly unseen: readonly Dot[] }>
  >();
  /** Increments that crossed the bound (installed somewhere after a superseding write's grace period). */
  crossings = 0;
  /** Increments made by a replica that had not seen a superseding write. */
  unawareIncrements = 0;

  /**
   * @param graceMs the replicas' tombstone grace period
   * @param replicaIds every replica of the namespace
   * @param maxTracked bound on the unaware increments followed at once (the oldest are dropped)
   */
  constructor(
    private readonly graceMs: number,
    private readonly replicaIds: readonly string[],
    private readonly maxTracked = 10_000,
  ) {}

  /** A delete of `key`: its tombstone's stamp and dot. */
  noteDelete(key: string, stamp: Hlc, dot: Dot): void {
    // A tombstone is collected its grace period after it was written.
    this.add(key, { position: stamp, dot, collectFromMs: stamp.wallMs + this.graceMs });
  }

  /**
   * An increment of `key` by `by`: the incarnation's base, the increment's dot
   * and stamp. Call it right after the increment was applied, while `by`'s
   * state is what the writer knew.
   */
  noteIncrement(key: string, base: Hlc, dot: Dot, wallMs: number, by: TrackedReplica): void {
    let boundMs = Number.POSITIVE_INFINITY;
    const unseen: Dot[] = [];
    for (const w of this.writes.get(key) ?? []) {
      if (compareHlc(w.position, base) > 0 && !by.seen(w.dot.node, w.dot.seq)) {
        boundMs = Math.min(boundMs, w.collectFromMs);
        unseen.push(w.dot);
      }
    }
    // A counter is collected its grace period after it expires, and it lives at least
    // MIN_TTL_MS past any of its increments (crdt INTERNALS §4, rule 3).
    this.add(key, { position: base, dot, collectFromMs: wallMs + MIN_TTL_MS + this.graceMs });
    if (boundMs === Number.POSITIVE_INFINITY) return;
    this.unawareIncrements++;
    if (this.unaware.length >= this.maxTracked) this.unaware.shift();
    const pending = new Set(this.replicaIds);
    pending.delete(by.replicaId);
    this.unaware.push({ key, base, dot, boundMs, unseen, pending });
  }

  /** After `replica` merged something at `nowMs`: records which unaware increments it installed, and when. */
  observe(replica: TrackedReplica, nowMs: number): void {
    if (this.unaware.length === 0) return;
    for (let i = 0; i < this.unaware.length; i++) {
      const u = this.unaware[i]!;
      if (!u.pending.has(replica.replicaId) || !replica.seen(u.dot.node, u.dot.seq)) continue;
      u.pending.delete(replica.replicaId);
      const state = replica.stateOf(u.key);
      // Installed: the replica holds that incarnation with the increment's share (or a later one of it).
      const installed =
        state?.type === 'counter' &&
        compareHlc(state, u.base) === 0 &&
        (state.shares.get(u.dot.node)?.seq ?? 0) >= u.dot.seq;
      if (installed && nowMs >= u.boundMs) {
        this.crossings++;
        let list = this.crossed.get(u.key);
        if (!list) this.crossed.set(u.key, (list = []));
        if (list.length < this.maxTracked) list.push({ replica: replica.replicaId, base: u.base, unseen: u.unseen });
      }
      if (u.pending.size === 0) this.unaware.splice(i--, 1);
    }
  }

  /**
   * Whether the bound explains why replicas `a` and `b` read `key` differently:
   * one of them holds a counter incarnation that an increment crossing the
   * bound installed there, and the other does not hold that incarnation but
   * has seen a write superseding it that the incrementing replica had not.
   */
  explains(key: string, a: TrackedReplica, b: TrackedReplica): boolean {
    const list = this.crossed.get(key);
    if (!list) return false;
    const holds = (r: TrackedReplica, base: Hlc) => {
      const st = r.stateOf(key);
      return st?.type === 'counter' && compareHlc(st, base) === 0;
    };
    const hidden = (by: TrackedReplica, shown: TrackedReplica, c: (typeof list)[number]) =>
      c.replica === shown.replicaId &&
      holds(shown, c.base) &&
      !holds(by, c.base) &&
      c.unseen.some((w) => by.seen(w.node, w.seq));
    return list.some((c) => hidden(b, a, c) || hidden(a, b, c));
  }

  private add(key: string, w: Superseding): void {
    let list = this.writes.get(key);
    if (!list) this.writes.set(key, (list = []));
    if (list.length >= this.maxTracked) list.shift();
    list.push(w);
  }
}

/** Whether a digest's ranges (per origin, flat sorted [lo, hi, ...]) hold the dot (node, seq). */
export function rangesHave(ranges: DotRanges, node: string, seq: number): boolean {
  const r = ranges.get(node);
  if (!r) return false;
  for (let i = 0; i < r.length; i += 2) {
    if (seq < r[i]!) return false;
    if (seq <= r[i + 1]!) return true;
  }
  return false;
}

/** A replica as the tracker sees it; its digest is taken once, on the first `seen`. */
export function trackReplica(replica: NamespaceReplica): TrackedReplica {
  let ranges: DotRanges | undefined;
  return {
    replicaId: replica.replicaId,
    seen: (node, seq) => rangesHave((ranges ??= replica.digest().context), node, seq),
    stateOf: (key) => replica.stateOf(key),
  };
}
