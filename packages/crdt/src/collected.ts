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
  return nowMs >= expiresAtOf(state) && collectableFrom(state, graceMs) <= nowMs;
}

/**
 * The physical ms from which the time rule collects `state` (once it reads as
 * absent): a tombstone or register `graceMs` after its write; a counter
 * `graceMs` after it expired, because an increment made just before its expiry,
 * by a replica that saw it live, still joins it and must find it everywhere.
 */
export function collectableFrom(state: KeyState, graceMs: number): number {
  return (state.type === 'counter' ? expiresAtOf(state) : maxWallOf(state)) + graceMs;
}

interface Floor {
  /** The latest write of the collected state. */
  readonly latest: Hlc;
  /** From this physical ms on, the time rule collects that state on every replica whose clock says so. */
  readonly fromMs: number;
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
    const fromMs = collectableFrom(state, this.graceMs);
    const prev = this.floors.get(key);
    if (prev && compareHlc(prev.latest, latest) >= 0) return;
    this.floors.set(key, { latest, fromMs: Math.max(prev?.fromMs ?? 0, fromMs) });
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
    return f.fromMs + this.skewMs;
  }
}
