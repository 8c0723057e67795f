/**
 * A per-origin index from dot (origin, seq) to the key holding it, so
 * anti-entropy finds what a peer lacks in O(missing dots · log n).
 */
import { forEachDot } from './key-state.js';
import type { KeyState } from './types.js';

/** One origin's part of the index. */
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

/**
 * The dots of the states a replica holds, each with its key. Dots stay
 * indexed after their state is superseded or collected (a scan checks the
 * key still holds the dot) until a rebuild drops them.
 */
export class DotIndex {
  private readonly byNode = new Map<string, OriginIndex>();
  private count = 0;

  /** Dots indexed, superseded ones included. */
  get size(): number {
    return this.count;
  }

  /** Indexes dot (node, seq) under `key`. In ascending seq per origin it only appends. */
  add(node: string, seq: number, key: string): void {
    let idx = this.byNode.get(node);
    if (!idx) {
      idx = { seqs: [], keys: [], tailSeqs: [], tailKeys: [] };
      this.byNode.set(node, idx);
    }
    const last = idx.seqs.length > 0 ? (idx.seqs[idx.seqs.length - 1] as number) : 0;
    if (idx.tailSeqs.length === 0 && seq > last) {
      idx.seqs.push(seq);
      idx.keys.push(key);
    } else {
      idx.tailSeqs.push(seq);
      idx.tailKeys.push(key);
      // Keep the unsorted tail small relative to the sorted part.
      if (idx.tailSeqs.length > 1024 && idx.tailSeqs.length * 8 > idx.seqs.length) settle(idx);
    }
    this.count++;
  }

  /** Calls fn(key, seq) for every indexed dot of `node` in the flat inclusive ranges [lo, hi, …]. */
  scan(node: string, ranges: readonly number[], fn: (key: string, seq: number) => void): void {
    const idx = this.byNode.get(node);
    if (!idx) return;
    settle(idx);
    const { seqs, keys } = idx;
    for (let r = 0; r < ranges.length; r += 2) {
      const lo = ranges[r] as number;
      const hi = ranges[r + 1] as number;
      for (let i = lowerBound(seqs, lo); i < seqs.length && (seqs[i] as number) <= hi; i++) {
        fn(keys[i] as string, seqs[i] as number);
      }
    }
  }

  /** Drops every dot and indexes those of `states` only (by ascending seq). */
  rebuild(states: ReadonlyMap<string, KeyState>): void {
    this.byNode.clear();
    this.count = 0;
    const all: Array<[string, number, string]> = [];
    for (const [key, state] of states) forEachDot(state, (node, seq) => all.push([node, seq, key]));
    all.sort((a, b) => a[1] - b[1]);
    for (const [node, seq, key] of all) this.add(node, seq, key);
  }
}
