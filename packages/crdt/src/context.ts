import type { DotRanges, KeyState } from './types.js';

/**
 * The set of dots (origin node, sequence number) a replica has seen, kept per
 * origin as sorted, disjoint, non-adjacent inclusive ranges in a flat array
 * [lo1, hi1, lo2, hi2, ...]. In the common case of in-order delivery each origin
 * is one range [1, n]; every lost or reordered delta adds at most one gap.
 */
export class DotContext {
  private readonly byNode = new Map<string, number[]>();

  /** Number of origins and total ranges: the size of the digest. */
  size(): { origins: number; ranges: number } {
    let ranges = 0;
    for (const r of this.byNode.values()) ranges += r.length / 2;
    return { origins: this.byNode.size, ranges };
  }

  has(node: string, seq: number): boolean {
    const r = this.byNode.get(node);
    if (!r) return false;
    // Last range whose lo ≤ seq.
    let lo = 0;
    let hi = r.length / 2 - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((r[mid * 2] as number) <= seq) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found >= 0 && seq <= (r[found * 2 + 1] as number);
  }

  /** Whether every dot `state` carries (a register's or tombstone's, each counter share's) has been seen. */
  seenAll(state: KeyState): boolean {
    if (state.type === 'counter') {
      for (const [node, share] of state.shares) if (!this.has(node, share.seq)) return false;
      return true;
    }
    return this.has(state.node, state.seq);
  }

  /** Whether every dot `(node, 1..seq)` has been seen (always for seq ≤ 0). */
  coversPrefix(node: string, seq: number): boolean {
    if (seq <= 0) return true;
    const r = this.byNode.get(node);
    return r !== undefined && r[0] === 1 && (r[1] as number) >= seq;
  }

  /** The ranges seen from `node` (flat [lo, hi, …]; empty when none). Read-only to callers. */
  rangesOf(node: string): readonly number[] {
    return this.byNode.get(node) ?? [];
  }

  /** Per origin, the end of the prefix `1..n` seen (origins with no prefix left out). */
  prefixFrontier(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [node, r] of this.byNode) if (r[0] === 1) out.set(node, r[1] as number);
    return out;
  }

  /** Highest seq seen from `node`, 0 when none. */
  maxSeq(node: string): number {
    const r = this.byNode.get(node);
    return r && r.length > 0 ? (r[r.length - 1] as number) : 0;
  }

  add(node: string, seq: number): void {
    const r = this.byNode.get(node);
    if (r && r.length > 0) {
      const last = r.length - 1;
      const hi = r[last] as number;
      if (seq === hi + 1) {
        r[last] = seq;
        return;
      }
      if (seq <= hi && seq >= (r[last - 1] as number)) return;
    }
    this.addRange(node, seq, seq);
  }

  /** Adds the inclusive range [lo, hi]. */
  addRange(node: string, lo: number, hi: number): void {
    let r = this.byNode.get(node);
    if (!r) {
      r = [];
      this.byNode.set(node, r);
    }
    // First range whose hi ≥ lo - 1 (it touches or follows the new range).
    let a = 0;
    let b = r.length / 2;
    while (a < b) {
      const mid = (a + b) >> 1;
      if ((r[mid * 2 + 1] as number) < lo - 1) a = mid + 1;
      else b = mid;
    }
    // Ranges from `a` on that touch [lo, hi] merge into it.
    let end = a;
    let newLo = lo;
    let newHi = hi;
    while (end < r.length / 2 && (r[end * 2] as number) <= hi + 1) {
      newLo = Math.min(newLo, r[end * 2] as number);
      newHi = Math.max(newHi, r[end * 2 + 1] as number);
      end++;
    }
    r.splice(a * 2, (end - a) * 2, newLo, newHi);
  }

  addAll(ranges: DotRanges): void {
    for (const [node, r] of ranges) {
      for (let i = 0; i < r.length; i += 2) this.addRange(node, r[i] as number, r[i + 1] as number);
    }
  }

  /** The dots seen here and not in `other`, as ranges, origins in sorted order. */
  minus(other: DotRanges): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const node of [...this.byNode.keys()].sort()) {
      const mine = this.byNode.get(node) as number[];
      const theirs = other.get(node) ?? [];
      const diff = subtractRanges(mine, theirs);
      if (diff.length > 0) out.set(node, diff);
    }
    return out;
  }

  /** A copy, origins in sorted order (deterministic encoding). */
  snapshot(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const node of [...this.byNode.keys()].sort()) {
      const r = this.byNode.get(node) as number[];
      if (r.length > 0) out.set(node, r.slice());
    }
    return out;
  }
}

/** a \ b for flat sorted range lists. Linear in the two lengths. */
export function subtractRanges(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let j = 0;
  for (let i = 0; i < a.length; i += 2) {
    let lo = a[i] as number;
    const hi = a[i + 1] as number;
    while (j < b.length && (b[j + 1] as number) < lo) j += 2;
    let k = j;
    while (lo <= hi && k < b.length && (b[k] as number) <= hi) {
      const blo = b[k] as number;
      const bhi = b[k + 1] as number;
      if (blo > lo) out.push(lo, blo - 1);
      lo = Math.max(lo, bhi + 1);
      k += 2;
    }
    if (lo <= hi) out.push(lo, hi);
  }
  return out;
}
