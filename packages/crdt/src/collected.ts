/**
 * What a replica remembers of the keys it garbage-collected: per key, the
 * latest stamp of the state it removed (its _floor_), for as long as another
 * replica may still hold that state. A counter started on such a key takes
 * the floor as its base, so it sits above the collected state in the LWW
 * order and never shares its incarnation (INTERNALS §4).
 */
import { compareHlc, type Hlc } from './hlc.js';
import { expiresAtOf, latestStampOf, maxWallOf } from './key-state.js';
import type { KeyState } from './types.js';

/**
 * True when garbage collection may remove `state` at `nowMs` by the time rule:
 * expired (or a tombstone) and written at least `graceMs` ago. A function of
 * the state and the time only, so replicas with the same clock agree on it.
 */
export function collectableAt(state: KeyState, nowMs: number, graceMs: number): boolean {
  return nowMs >= expiresAtOf(state) && maxWallOf(state) + graceMs <= nowMs;
}

interface Floor {
  /** The latest write of the collected state. */
  readonly latest: Hlc;
  /** Its physical ms. */
  readonly wallMs: number;
}

/**
 * Floors of recently collected keys, each kept until every replica's clock is
 * past its state's grace period (a peer's clock may lag by `skewMs`): from
 * then on every replica treats that state as collected. Size: the keys
 * collected within the last `skewMs` after their grace period (up to a grace
 * period longer for early collections).
 */
export class CollectedFloors {
  private readonly floors = new Map<string, Floor>();

  /**
   * @param graceMs the replica's tombstone grace period
   * @param skewMs how far another replica's clock may lag (the drift bound)
   */
  constructor(
    private readonly graceMs: number,
    private readonly skewMs: number,
  ) {}

  get size(): number {
    return this.floors.size;
  }

  /** Remembers that `state` of `key` was removed here. */
  note(key: string, state: KeyState): void {
    const latest = latestStampOf(state);
    const wallMs = maxWallOf(state);
    const prev = this.floors.get(key);
    if (prev && compareHlc(prev.latest, latest) >= 0) return;
    this.floors.set(key, { latest, wallMs: Math.max(prev?.wallMs ?? 0, wallMs) });
  }

  /** The latest stamp of `key`'s collected state, while a peer may still hold that state. */
  baseOf(key: string, nowMs: number): Hlc | undefined {
    const f = this.floors.get(key);
    return f && nowMs < this.untilMs(f) ? f.latest : undefined;
  }

  /** Forgets the floors no replica can need any more at `nowMs`. */
  prune(nowMs: number): void {
    for (const [key, f] of this.floors) if (this.untilMs(f) <= nowMs) this.floors.delete(key);
  }

  private untilMs(f: Floor): number {
    return f.wallMs + this.graceMs + this.skewMs;
  }
}
