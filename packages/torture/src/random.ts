/**
 * A seeded pseudo-random generator (mulberry32 over a 32-bit state). The
 * schedule of a run is a pure function of its seed, so a failing seed replays
 * the same faults at the same offsets.
 */
export class Random {
  private state: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be a non-negative integer: ${seed}`);
    // Fold the seed's high bits in, so seeds above 2^32 still differ.
    this.state = (seed ^ Math.floor(seed / 2 ** 32)) >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [lo, hi] (both included). */
  int(lo: number, hi: number): number {
    if (hi < lo) throw new RangeError(`empty range ${lo}..${hi}`);
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty array');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A child generator: its sequence depends on this one's state and the label, not on later draws here. */
  fork(label: string): Random {
    let h = this.int(0, 2 ** 31 - 1);
    for (let i = 0; i < label.length; i++) h = (Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0) % 2 ** 31;
    return new Random(h);
  }
}
