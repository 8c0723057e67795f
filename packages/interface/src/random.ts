/**
 * Seedable randomness. Every random choice in a protocol comes from a Random
 * handed to it, so one seed replays a whole run.
 */
export interface Random {
  /** A uniformly distributed unsigned 32-bit integer. */
  nextU32(): number;
  /** A uniformly distributed integer in [0, maxExclusive). maxExclusive ≤ 2^32. */
  int(maxExclusive: number): number;
  /** A float in [0, 1) with 32 bits of randomness. */
  float(): number;
  /** A new independent generator derived from this one (for a sub-component). */
  fork(): Random;
}

/**
 * sfc32 (Chris Doty-Humphrey's small fast counting generator): integer-only,
 * 128 bits of state, passes PractRand for the sizes Parley uses.
 */
export class SeededRandom implements Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    const s = Math.trunc(seed);
    // Split the seed into two 32-bit halves so seeds beyond 2^32 still differ.
    this.a = s >>> 0;
    this.b = Math.trunc(s / 0x1_0000_0000) >>> 0;
    this.c = 0x9e3779b9;
    this.d = 1;
    for (let i = 0; i < 16; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  int(maxExclusive: number): number {
    if (!(maxExclusive >= 1) || maxExclusive > 0x1_0000_0000 || !Number.isInteger(maxExclusive)) {
      throw new RangeError(`int(${maxExclusive}): bound must be an integer in 1..2^32`);
    }
    // Rejection sampling keeps the distribution exactly uniform.
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % maxExclusive);
    for (;;) {
      const x = this.nextU32();
      if (x < limit) return x % maxExclusive;
    }
  }

  float(): number {
    return this.nextU32() / 0x1_0000_0000;
  }

  fork(): Random {
    return new SeededRandom(this.nextU32() * 0x1_0000_0000 + this.nextU32());
  }
}
