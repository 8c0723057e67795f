/**
 * Runs a target for a number of iterations from a seed.
 *
 * Iteration `i` of target `t` under seed `s` draws every choice from its own
 * generator, derived from (s, t, i) alone, so any iteration replays by itself:
 * `npm run fuzz -- --decoder t --seed s --iteration i`. Valid encodings come
 * from a pool of 64 values per epoch of 2,048 iterations; each pool value is
 * likewise derived from (s, t, epoch, slot). An iteration either re-checks a
 * pool value (one in sixteen) or mutates one, splicing in a second.
 */
import { type ErrorCode, ParleyError, type Random, SeededRandom } from '@parley/interface';
import { checkInput, checkValid, type FailureKind, type Outcome } from './contract.js';
import { Gen } from './gen.js';
import { mutate } from './mutate.js';
import type { AnyTarget } from './target.js';

export const POOL_SIZE = 64;
export const EPOCH_ITERATIONS = 2048;
const VALID_SHARE = 1 / 16;
const REPAIR_SHARE = 0.85;

export interface Failure {
  decoder: string;
  seed: number;
  iteration: number;
  kind: FailureKind;
  message: string;
  stack: string;
  input: Uint8Array;
}

export interface TargetStats {
  decoder: string;
  iterations: number;
  /** Inputs the decoder accepted (and that then round-tripped). */
  accepted: number;
  /** Inputs rejected with a documented ParleyError code, by code. */
  rejected: Partial<Record<ErrorCode, number>>;
  /** Unmutated valid encodings checked. */
  validChecked: number;
  /** Valid encodings the decoder refused with a typed error: the encoder writes what the decoder rejects. */
  validRejected: number;
  validRejectedExample?: string;
  failures: Partial<Record<FailureKind, number>>;
  failureCount: number;
  inputBytes: number;
  maxInputBytes: number;
  maxDecodeMs: number;
  ms: number;
}

function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The generator of one (seed, stream, index) triple. */
export function derivedRandom(seed: number, stream: string, index: number): Random {
  const s = hashName(stream);
  const lo = mix32(mix32(s ^ (seed >>> 0)) ^ mix32(index >>> 0));
  const hi = mix32(
    mix32(s + 0x9e3779b9) ^ (Math.floor(seed / 0x1_0000_0000) >>> 0) ^ Math.floor(index / 0x1_0000_0000),
  );
  return new SeededRandom((hi & 0x1f_ffff) * 0x1_0000_0000 + lo);
}

interface PoolEntry {
  value: unknown;
  bytes: Uint8Array;
}

/** Valid values and their encodings, generated lazily per (epoch, slot). */
export class Pool {
  private epoch = -1;
  private slots: (PoolEntry | undefined)[] = [];
  /** An encoder failure met while filling the pool (reported once by the runner). */
  encoderFailure: { message: string; stack: string } | undefined;

  constructor(
    private readonly target: AnyTarget,
    private readonly seed: number,
  ) {}

  get(epoch: number, slot: number): PoolEntry {
    if (epoch !== this.epoch) {
      this.epoch = epoch;
      this.slots = new Array(POOL_SIZE);
    }
    let entry = this.slots[slot];
    if (entry === undefined) {
      entry = this.make(epoch, slot);
      this.slots[slot] = entry;
    }
    return entry;
  }

  private make(epoch: number, slot: number): PoolEntry {
    for (let attempt = 0; attempt < 8; attempt++) {
      const g = new Gen(derivedRandom(this.seed, `${this.target.name}/pool/${attempt}`, epoch * POOL_SIZE + slot));
      const value = this.target.generate(g);
      try {
        // A plain copy: a Buffer's slice() is a view, and mutators must never write into the pool.
        return { value, bytes: new Uint8Array(this.target.encode(value)) };
      } catch (err) {
        // A value past a documented limit: the encoder refuses it with a typed error; draw another
        // (unless the target's generator never passes a limit).
        if (!(err instanceof ParleyError) || this.target.strict) {
          this.encoderFailure ??= {
            message: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
            stack: err instanceof Error ? (err.stack ?? '') : '',
          };
        }
      }
    }
    return { value: undefined, bytes: new Uint8Array(0) };
  }
}

export interface Iteration {
  input: Uint8Array;
  /** The valid value when the input is an unmutated pool encoding. */
  valid?: { value: unknown };
}

/** The input of iteration `i` (no decoding). */
export function makeInput(target: AnyTarget, pool: Pool, seed: number, i: number): Iteration {
  const g = new Gen(derivedRandom(seed, target.name, i));
  const epoch = Math.floor(i / EPOCH_ITERATIONS);
  const a = pool.get(epoch, g.int(POOL_SIZE));
  if (a.value !== undefined && g.bool(VALID_SHARE)) return { input: a.bytes, valid: { value: a.value } };
  const b = pool.get(epoch, g.int(POOL_SIZE));
  let input = mutate({ bytes: a.bytes, other: b.bytes, jsonStart: target.jsonStart }, g);
  if (target.repair && g.bool(REPAIR_SHARE)) input = target.repair(input);
  return { input };
}

export function runIteration(target: AnyTarget, pool: Pool, seed: number, i: number): { it: Iteration; out: Outcome } {
  const it = makeInput(target, pool, seed, i);
  const out = it.valid ? checkValid(target, it.valid.value, it.input) : checkInput(target, it.input);
  return { it, out };
}

export function emptyStats(decoder: string): TargetStats {
  return {
    decoder,
    iterations: 0,
    accepted: 0,
    rejected: {},
    validChecked: 0,
    validRejected: 0,
    failures: {},
    failureCount: 0,
    inputBytes: 0,
    maxInputBytes: 0,
    maxDecodeMs: 0,
    ms: 0,
  };
}

export interface RunOptions {
  seed: number;
  /** First iteration (default 0). */
  start?: number;
  iterations: number;
  onFailure?: (f: Failure) => void;
  /** Called before each iteration with its number (the CLI's watchdog reads it). */
  onIteration?: (i: number) => void;
}

export function runTarget(target: AnyTarget, opts: RunOptions, stats = emptyStats(target.name)): TargetStats {
  const pool = new Pool(target, opts.seed);
  const start = opts.start ?? 0;
  const t0 = performance.now();
  let encoderReported = false;
  for (let i = start; i < start + opts.iterations; i++) {
    opts.onIteration?.(i);
    const { it, out } = runIteration(target, pool, opts.seed, i);
    stats.iterations++;
    stats.inputBytes += it.input.length;
    if (it.input.length > stats.maxInputBytes) stats.maxInputBytes = it.input.length;
    if (it.valid) stats.validChecked++;
    if (out.status === 'accepted') {
      stats.accepted++;
      if (out.decodeMs > stats.maxDecodeMs) stats.maxDecodeMs = out.decodeMs;
    } else if (out.status === 'rejected') {
      const code = out.code as ErrorCode;
      stats.rejected[code] = (stats.rejected[code] ?? 0) + 1;
      if (out.decodeMs > stats.maxDecodeMs) stats.maxDecodeMs = out.decodeMs;
      if (it.valid) {
        stats.validRejected++;
        stats.validRejectedExample ??= `iteration ${i}`;
      }
    } else {
      stats.failures[out.kind] = (stats.failures[out.kind] ?? 0) + 1;
      stats.failureCount++;
      opts.onFailure?.({ decoder: target.name, seed: opts.seed, iteration: i, ...out, input: it.input });
    }
    if (pool.encoderFailure && !encoderReported) {
      encoderReported = true;
      stats.failures['encoder-threw'] = (stats.failures['encoder-threw'] ?? 0) + 1;
      stats.failureCount++;
      opts.onFailure?.({
        decoder: target.name,
        seed: opts.seed,
        iteration: i,
        kind: 'encoder-threw',
        ...pool.encoderFailure,
        input: new Uint8Array(0),
      });
    }
  }
  stats.ms += performance.now() - t0;
  return stats;
}

/** Splits `total` across targets in proportion to their shares (largest remainders get the rest). */
export function split(targets: readonly AnyTarget[], total: number): number[] {
  const shares = targets.map((t) => t.share ?? 1);
  const sum = shares.reduce((a, b) => a + b, 0);
  const exact = shares.map((s) => (total * s) / sum);
  const counts = exact.map(Math.floor);
  let left = total - counts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) {
    if (left-- <= 0) break;
    counts[i] = (counts[i] as number) + 1;
  }
  return counts;
}
