/**
 * DotContext against a plain set of dots, found under-tested by the mutation
 * run (docs/simulation.md, "Mutation testing (Stryker)"): adding a range
 * between existing ranges, subtracting ranges of every shape, the digest's
 * size, and a snapshot that does not alias the live context.
 */
import { testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DotContext, subtractRanges } from './context.js';

const SEED = testSeed(20_261_131);
const MAX = 30;
const NODES = ['a', 'b', 'c'];

/** Sorted, merged, non-adjacent inclusive ranges of a set of seqs, flat. */
function rangesOf(seqs: Set<number>): number[] {
  const out: number[] = [];
  for (const s of [...seqs].sort((x, y) => x - y)) {
    if (out.length > 0 && out[out.length - 1] === s - 1) out[out.length - 1] = s;
    else out.push(s, s);
  }
  return out;
}

function seqsOf(ranges: readonly number[]): Set<number> {
  const out = new Set<number>();
  for (let i = 0; i < ranges.length; i += 2)
    for (let s = ranges[i] as number; s <= (ranges[i + 1] as number); s++) out.add(s);
  return out;
}

type Op = { node: string; lo: number; len: number; single: boolean };
const op: fc.Arbitrary<Op> = fc.record({
  node: fc.constantFrom(...NODES),
  lo: fc.integer({ min: 1, max: MAX }),
  len: fc.integer({ min: 0, max: 4 }),
  single: fc.boolean(),
});

function build(ops: Op[]): { ctx: DotContext; ref: Map<string, Set<number>> } {
  const ctx = new DotContext();
  const ref = new Map<string, Set<number>>();
  for (const o of ops) {
    const set = ref.get(o.node) ?? new Set<number>();
    ref.set(o.node, set);
    if (o.single) {
      ctx.add(o.node, o.lo);
      set.add(o.lo);
    } else {
      ctx.addRange(o.node, o.lo, o.lo + o.len);
      for (let s = o.lo; s <= o.lo + o.len; s++) set.add(s);
    }
  }
  return { ctx, ref };
}

function check<T>(arb: fc.Arbitrary<T>, predicate: (t: T) => void): void {
  withSeed(SEED, (seed) => fc.assert(fc.property(arb, predicate), { numRuns: 500, seed }));
}

describe('DotContext matches a set of dots', () => {
  it('has, maxSeq, snapshot and size after any adds', () => {
    check(fc.array(op, { maxLength: 25 }), (ops) => {
      const { ctx, ref } = build(ops);
      let ranges = 0;
      for (const node of NODES) {
        const set = ref.get(node) ?? new Set<number>();
        for (let s = 0; s <= MAX + 6; s++) expect(ctx.has(node, s)).toBe(set.has(s));
        expect(ctx.maxSeq(node)).toBe(set.size === 0 ? 0 : Math.max(...set));
        ranges += rangesOf(set).length / 2;
      }
      const snap = ctx.snapshot();
      expect([...snap.keys()]).toEqual(NODES.filter((n) => (ref.get(n)?.size ?? 0) > 0));
      for (const [node, r] of snap) expect(r).toEqual(rangesOf(ref.get(node) as Set<number>));
      expect(ctx.size()).toEqual({ origins: snap.size, ranges });
    });
  });

  it('minus gives exactly the dots the other lacks, with no empty origin', () => {
    check(fc.tuple(fc.array(op, { maxLength: 20 }), fc.array(op, { maxLength: 20 })), ([mine, theirs]) => {
      const a = build(mine);
      const b = build(theirs);
      const diff = a.ctx.minus(b.ctx.snapshot());
      for (const node of NODES) {
        const want = new Set([...(a.ref.get(node) ?? [])].filter((s) => !b.ref.get(node)?.has(s)));
        if (want.size === 0) expect(diff.has(node)).toBe(false);
        else expect(diff.get(node)).toEqual(rangesOf(want));
      }
    });
  });

  it('subtractRanges is set difference on any two range lists', () => {
    const list = fc.uniqueArray(fc.integer({ min: 1, max: MAX }), { maxLength: 20 }).map((s) => rangesOf(new Set(s)));
    check(fc.tuple(list, list), ([a, b]) => {
      const bs = seqsOf(b);
      expect(subtractRanges(a, b)).toEqual(rangesOf(new Set([...seqsOf(a)].filter((s) => !bs.has(s)))));
    });
  });

  it('a snapshot is a copy: the context growing later does not change it', () => {
    const ctx = new DotContext();
    ctx.addRange('a', 1, 3);
    const snap = ctx.snapshot();
    ctx.add('a', 4);
    ctx.addRange('a', 6, 7);
    expect(snap.get('a')).toEqual([1, 3]);
    expect(ctx.snapshot().get('a')).toEqual([1, 4, 6, 7]);
  });
});
