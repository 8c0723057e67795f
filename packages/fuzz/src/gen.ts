/**
 * Seeded generators of valid values: sizes skewed small with a long tail,
 * boundary numbers, strings over several alphabets (ASCII, BMP, astral,
 * control characters, prototype names), and JSON values that are wide, long
 * or nested deep. Every choice comes from one `Random`, so a seed replays it.
 */
import type { Random } from '@parley/interface';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Unsigned integers at the edges of every encoding width Parley uses. */
export const BOUNDARY_UINTS: readonly number[] = [
  0,
  1,
  2,
  0x7f,
  0x80,
  0xff,
  0x100,
  0x3fff,
  0x4000,
  0xffff,
  0x1_0000,
  0x1f_ffff,
  0x20_0000,
  0x7fff_ffff,
  0x8000_0000,
  0xffff_ffff,
  0x1_0000_0000,
  2 ** 49 - 1,
  2 ** 49,
  Number.MAX_SAFE_INTEGER - 1,
  Number.MAX_SAFE_INTEGER,
];

/** Doubles at the edges of what JSON text and float64 fields carry. */
export const BOUNDARY_DOUBLES: readonly number[] = [
  0,
  -0,
  1,
  -1,
  0.1,
  -0.5,
  1e21,
  1e-7,
  123456789.125,
  5e-324,
  -5e-324,
  2.2250738585072014e-308,
  1.7976931348623157e308,
  -1.7976931348623157e308,
  2 ** 53,
  -(2 ** 53),
  Number.MAX_SAFE_INTEGER,
  Number.MIN_SAFE_INTEGER,
];

const SPECIAL_STRINGS = [
  '',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '\u0000',
  '\u0001',
  '\u0000\u0001\u0002',
  '\uFEFF',
  '\uFEFFbom',
  '\u2028\u2029',
  '\uFFFD',
  '\uFFFF',
  '\u{10FFFF}',
  '😀',
  'a/b/c',
  '*',
  '"\\',
  '0',
  '-0',
  '1e400',
];

const ALPHABETS: readonly (readonly [number, number])[] = [
  [0x61, 0x7a], // a-z
  [0x20, 0x7e], // printable ASCII
  [0x00, 0x1f], // control characters
  [0x80, 0x7ff], // two-byte UTF-8
  [0x800, 0xd7ff], // three-byte UTF-8
  [0xe000, 0xffff], // BMP above the surrogates
  [0x1_0000, 0x10_ffff], // astral (surrogate pairs)
];

export class Gen {
  constructor(readonly rng: Random) {}

  /** Integer in [0, n). */
  int(n: number): number {
    return n <= 1 ? 0 : n > 0x1_0000_0000 ? Math.floor(this.rng.float() * n) : this.rng.int(n);
  }

  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  bool(pTrue = 0.5): boolean {
    return this.rng.float() < pTrue;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** A count: mostly small, sometimes hundreds, rarely up to `max`. */
  size(max: number): number {
    const r = this.rng.float();
    const cap = r < 0.6 ? 4 : r < 0.9 ? 16 : r < 0.998 ? 256 : max;
    return this.int(Math.min(cap, max) + 1);
  }

  /** An unsigned safe integer: boundaries, small values or anything up to 2^53 − 1. */
  uint(max = Number.MAX_SAFE_INTEGER): number {
    const r = this.rng.float();
    let v: number;
    if (r < 0.3) v = this.pick(BOUNDARY_UINTS);
    else if (r < 0.7) v = this.int(128);
    else if (r < 0.9) v = this.rng.nextU32();
    else v = (this.rng.nextU32() & 0x1f_ffff) * 0x1_0000_0000 + this.rng.nextU32();
    return Math.min(v, max);
  }

  /** An unsigned integer in [lo, hi], with the ends and their neighbours likelier. */
  uintIn(lo: number, hi: number): number {
    const r = this.rng.float();
    if (r < 0.1) return lo;
    if (r < 0.2) return hi;
    if (r < 0.25 && lo < hi) return lo + 1;
    if (r < 0.3 && lo < hi) return hi - 1;
    const v = this.uint(hi);
    return v < lo ? lo + (v % Math.max(1, Math.min(hi - lo + 1, 1_000_000))) : v;
  }

  /** Any finite double: boundaries, integers, fractions, or random bit patterns. */
  double(): number {
    const r = this.rng.float();
    if (r < 0.3) return this.pick(BOUNDARY_DOUBLES);
    if (r < 0.6) return this.range(-1000, 1000);
    if (r < 0.8) return (this.rng.float() - 0.5) * 10 ** this.range(-10, 20);
    const view = new DataView(new ArrayBuffer(8));
    view.setUint32(0, this.rng.nextU32());
    view.setUint32(4, this.rng.nextU32());
    const x = view.getFloat64(0);
    return Number.isFinite(x) ? x : 0;
  }

  /** A well-formed string (no lone surrogates) of up to `maxChars` code points. */
  string(maxChars = 64, minChars = 0): string {
    if (minChars === 0 && this.bool(0.1)) return this.pick(SPECIAL_STRINGS);
    const n = Math.max(minChars, this.size(maxChars));
    const alphabets = this.bool(0.5) ? [ALPHABETS[0] as [number, number]] : ALPHABETS;
    const mixed = this.bool(0.3);
    let a = this.pick(alphabets);
    let out = '';
    for (let i = 0; i < n; i++) {
      if (mixed) a = this.pick(alphabets);
      let cp = this.range(a[0], a[1]);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x61;
      out += String.fromCodePoint(cp);
    }
    return out;
  }

  /** A non-empty well-formed string (ids, keys). */
  id(maxChars = 24): string {
    const s = this.string(maxChars, 1);
    return s === '' ? 'x' : s;
  }

  /** `n` random bytes. */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      const x = this.rng.nextU32();
      out[i] = x;
      if (i + 1 < n) out[i + 1] = x >>> 8;
      if (i + 2 < n) out[i + 2] = x >>> 16;
      if (i + 3 < n) out[i + 3] = x >>> 24;
    }
    return out;
  }

  /** A byte string: mostly short, sometimes up to `max` bytes. */
  blob(max = 4096): Uint8Array {
    return this.bytes(this.size(max));
  }

  /**
   * A JSON value. Shapes: scalars, wide containers, long strings, and chains
   * nested up to `maxDepth` (built iteratively, so any depth is cheap).
   */
  json(maxDepth = 8, maxNodes = 200): Json {
    const r = this.rng.float();
    if (r < 0.08) return this.deepJson(this.deepDepth(maxDepth));
    const budget = { nodes: this.bool(0.95) ? Math.min(maxNodes, 40) : maxNodes };
    return this.jsonNode(Math.min(maxDepth, 6), budget);
  }

  private deepDepth(maxDepth: number): number {
    const candidates = [2, 10, 31, 32, 33, 63, 64, 65, 100, 500, 1000, 5000].filter((d) => d <= maxDepth);
    return candidates.length === 0 ? maxDepth : this.pick(candidates);
  }

  /** A value nested exactly `depth` containers deep (mixing arrays and objects). */
  deepJson(depth: number): Json {
    let v: Json = this.scalar();
    const arraysOnly = this.bool(0.5);
    for (let i = 0; i < depth; i++)
      v = arraysOnly || this.bool(0.5) ? [v] : { [this.bool(0.9) ? 'a' : this.string(4)]: v };
    return v;
  }

  scalar(): Json {
    switch (this.int(5)) {
      case 0:
        return null;
      case 1:
        return this.bool();
      case 2: {
        const d = this.double();
        return d === 0 ? 0 : d; // JSON has no -0
      }
      default:
        return this.bool(0.005) ? this.string(this.bool(0.5) ? 4096 : 65_536) : this.string(16);
    }
  }

  private jsonNode(depth: number, budget: { nodes: number }): Json {
    budget.nodes--;
    if (depth <= 0 || budget.nodes <= 0 || this.bool(0.4)) return this.scalar();
    const n = this.size(budget.nodes);
    if (this.bool(0.5)) {
      const arr: Json[] = [];
      for (let i = 0; i < n && budget.nodes > 0; i++) arr.push(this.jsonNode(depth - 1, budget));
      return arr;
    }
    const obj: { [key: string]: Json } = {};
    for (let i = 0; i < n && budget.nodes > 0; i++) {
      const key = this.string(12);
      // defineProperty, so '__proto__' becomes an own key (as JSON.parse makes it), not the prototype.
      Object.defineProperty(obj, key, {
        value: this.jsonNode(depth - 1, budget),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return obj;
  }
}
