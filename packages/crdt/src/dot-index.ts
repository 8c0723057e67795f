/**
 * A per-origin index from dot (origin, seq) to the key holding it, so
 * anti-entropy finds what a peer lacks in O(missing dots · log n).
 */

/** Per-origin index from dot to key, for O(difference) anti-entropy. */
export interface OriginIndex {
  /** Sorted by seq. */
  seqs: number[];
  keys: string[];
  /** Appended out of order; merged into seqs/keys before a scan. */
  tailSeqs: number[];
  tailKeys: string[];
}

export function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((a[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Merges an index's unsorted tail into its sorted part. */
export function settle(idx: OriginIndex): void {
  if (idx.tailSeqs.length === 0) return;
  const order = idx.tailSeqs.map((_, i) => i).sort((a, b) => (idx.tailSeqs[a] as number) - (idx.tailSeqs[b] as number));
  const seqs: number[] = [];
  const keys: string[] = [];
  let i = 0;
  let j = 0;
  while (i < idx.seqs.length || j < order.length) {
    const t = order[j];
    if (t === undefined || (i < idx.seqs.length && (idx.seqs[i] as number) <= (idx.tailSeqs[t] as number))) {
      seqs.push(idx.seqs[i] as number);
      keys.push(idx.keys[i] as string);
      i++;
    } else {
      seqs.push(idx.tailSeqs[t] as number);
      keys.push(idx.tailKeys[t] as string);
      j++;
    }
  }
  idx.seqs = seqs;
  idx.keys = keys;
  idx.tailSeqs = [];
  idx.tailKeys = [];
}
