/**
 * The linearizability search's memo: configurations already explored, each a
 * (set of linearized calls with a known outcome, set of linearized calls with an
 * unknown outcome, model state) triple.
 *
 * Memory grows with need, not with the history: the known set is stored as the
 * length of its longest prefix of calls (in call order) plus the few calls
 * linearized beyond it, and the unknown set as the list of its members. A
 * history without concurrency costs a few words per entry, whatever its length.
 *
 * Lookups are by subsumption: a configuration is pruned when one with the same
 * known set and state, and a subset of its unknown calls, was already explored.
 * Calls with an unknown outcome are optional, so a configuration that has used
 * fewer of them can do everything this one can.
 *
 * Everything lives in flat typed arrays (no per-entry objects, no garbage).
 */

export class MemoTable {
  private heads = new Int32Array(1 << 12).fill(-1); // bucket → first entry, -1 = none
  private hashes = new Int32Array(1 << 10);
  private sids = new Int32Array(1 << 10);
  private offsets = new Int32Array(1 << 10);
  private chain = new Int32Array(1 << 10); // entry → next entry in its bucket
  private pool = new Int32Array(1 << 12);
  private poolUsed = 0;
  size = 0;

  /** Bytes held by the table's arrays. */
  get bytes(): number {
    return (
      4 * (this.heads.length + this.hashes.length + this.sids.length + this.offsets.length + this.chain.length) +
      4 * this.pool.length
    );
  }

  /**
   * Records a configuration unless an explored one subsumes it; returns false
   * when it is subsumed (the caller prunes it).
   *
   * `known` holds `[prefix, extraCount, ...extras]`, `unknown` the sorted members
   * of the unknown set; only `knownLength` and `unknownLength` items are read.
   */
  insert(
    hash: number,
    sid: number,
    known: Int32Array,
    knownLength: number,
    unknown: Int32Array,
    unknownLength: number,
  ): boolean {
    const bucket = hash & (this.heads.length - 1);
    for (let e = this.heads[bucket]!; e !== -1; e = this.chain[e]!) {
      if (this.hashes[e] !== hash || this.sids[e] !== sid) continue;
      const base = this.offsets[e]!;
      if (!this.sameKnown(base, known, knownLength)) continue;
      if (this.unknownSubset(base + knownLength, unknown, unknownLength)) return false;
    }
    this.add(hash, sid, known, knownLength, unknown, unknownLength);
    return true;
  }

  private sameKnown(base: number, known: Int32Array, length: number): boolean {
    const pool = this.pool;
    // prefix and extra count first: they decide the length.
    if (pool[base] !== known[0] || pool[base + 1] !== known[1]) return false;
    for (let i = 2; i < length; i++) if (pool[base + i] !== known[i]) return false;
    return true;
  }

  /** Is the stored unknown set at `at` a subset of `unknown`? */
  private unknownSubset(at: number, unknown: Int32Array, length: number): boolean {
    const pool = this.pool;
    const stored = pool[at]!;
    if (stored > length) return false;
    let j = 0;
    for (let i = 0; i < stored; i++) {
      const x = pool[at + 1 + i]!;
      while (j < length && unknown[j]! < x) j++;
      if (j === length || unknown[j] !== x) return false;
      j++;
    }
    return true;
  }

  private add(
    hash: number,
    sid: number,
    known: Int32Array,
    knownLength: number,
    unknown: Int32Array,
    unknownLength: number,
  ): void {
    const e = this.size;
    if (e === this.hashes.length) this.growEntries();
    const need = knownLength + 1 + unknownLength;
    if (this.poolUsed + need > this.pool.length) {
      let cap = this.pool.length * 2;
      while (cap < this.poolUsed + need) cap *= 2;
      const pool = new Int32Array(cap);
      pool.set(this.pool.subarray(0, this.poolUsed));
      this.pool = pool;
    }
    const base = this.poolUsed;
    this.pool.set(known.subarray(0, knownLength), base);
    this.pool[base + knownLength] = unknownLength;
    this.pool.set(unknown.subarray(0, unknownLength), base + knownLength + 1);
    this.poolUsed += need;
    this.hashes[e] = hash;
    this.sids[e] = sid;
    this.offsets[e] = base;
    this.size++;
    if (this.size > this.heads.length) {
      this.rehash();
    } else {
      const bucket = hash & (this.heads.length - 1);
      this.chain[e] = this.heads[bucket]!;
      this.heads[bucket] = e;
    }
  }

  private growEntries(): void {
    const cap = this.hashes.length * 2;
    const grow = (a: Int32Array) => {
      const b = new Int32Array(cap);
      b.set(a);
      return b;
    };
    this.hashes = grow(this.hashes);
    this.sids = grow(this.sids);
    this.offsets = grow(this.offsets);
    this.chain = grow(this.chain);
  }

  private rehash(): void {
    const heads = new Int32Array(this.heads.length * 2).fill(-1);
    const mask = heads.length - 1;
    for (let e = 0; e < this.size; e++) {
      const bucket = this.hashes[e]! & mask;
      this.chain[e] = heads[bucket]!;
      heads[bucket] = e;
    }
    this.heads = heads;
  }
}
