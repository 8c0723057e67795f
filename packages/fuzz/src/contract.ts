/**
 * The decoder contract, checked on one input.
 *
 * For every byte string `b`, `decode(b)` either throws a ParleyError with one
 * of the decoder's documented codes, or returns a value `v` such that
 *   - `v` is in the decoder's domain (`target.valid`),
 *   - `v` holds no more than `bytesPerInputByte · |b| + 64 KiB` (see `footprint`),
 *   - decoding took less than 1 s + 10 µs per input byte (the fastest of three tries),
 *   - `encode(v)` succeeds, and `decode(encode(v))` succeeds and equals `v`,
 *   - `encode` of that second value gives the same bytes again (the encoding is stable),
 *   - for a canonical decoder, `encode(v)` is `b` itself.
 * Anything else — another exception, a hang, a blown heap — is a failure.
 */
import { ParleyError } from '@parley/interface';
import { bytesEqual, firstDifference, footprint } from './equal.js';
import { type AnyTarget, InvariantError } from './target.js';

export type FailureKind =
  | 'untyped-throw'
  | 'wrong-code'
  | 'invariant'
  | 'invalid-value'
  | 'over-allocation'
  | 'slow'
  | 'reencode-threw'
  | 'redecode-threw'
  | 'round-trip-mismatch'
  | 'unstable-encoding'
  | 'non-canonical'
  | 'valid-mismatch'
  | 'valid-rejected'
  | 'encoder-threw'
  | 'hang'
  | 'out-of-memory';

export type Outcome =
  | { status: 'accepted'; decodeMs: number }
  | { status: 'rejected'; code: string; decodeMs: number }
  | { status: 'failed'; kind: FailureKind; message: string; stack: string };

export const FOOTPRINT_SLACK_BYTES = 64 * 1024;
export const DEFAULT_BYTES_PER_INPUT_BYTE = 32;

export function slowLimitMs(inputBytes: number): number {
  return 1000 + inputBytes / 100;
}

function describe(err: unknown): { message: string; stack: string } {
  if (err instanceof Error) {
    return { message: `${err.name}: ${err.message}`.slice(0, 2000), stack: (err.stack ?? '').slice(0, 4000) };
  }
  return { message: String(err).slice(0, 2000), stack: '' };
}

function fail(kind: FailureKind, err: unknown, prefix = ''): Outcome {
  const d = describe(err);
  return { status: 'failed', kind, message: prefix + d.message, stack: d.stack };
}

function failText(kind: FailureKind, message: string): Outcome {
  return { status: 'failed', kind, message, stack: '' };
}

/** A thrown value the decoder may throw: a ParleyError with a documented code. */
export function classifyThrow(target: AnyTarget, err: unknown): Outcome | undefined {
  if (err instanceof ParleyError) {
    if (target.codes.includes(err.code)) return undefined;
    return fail('wrong-code', err, `code ${err.code} is not one of ${target.codes.join(', ')}: `);
  }
  return fail(err instanceof InvariantError ? 'invariant' : 'untyped-throw', err);
}

function timedDecode(target: AnyTarget, input: Uint8Array): { value?: unknown; err?: unknown; ms: number } {
  const t0 = performance.now();
  try {
    const value = target.decode(input);
    return { value, ms: performance.now() - t0 };
  } catch (err) {
    return { err, ms: performance.now() - t0 };
  }
}

/** Checks the contract on `input`. */
export function checkInput(target: AnyTarget, input: Uint8Array): Outcome {
  let first = timedDecode(target, input);
  if (first.ms > slowLimitMs(input.length)) {
    // A GC pause or a busy machine is not a slow decoder: keep the fastest of three tries.
    for (let i = 0; i < 2; i++) {
      const again = timedDecode(target, input);
      if (again.ms < first.ms) first = again;
    }
    if (first.ms > slowLimitMs(input.length)) {
      return failText('slow', `decoding ${input.length} bytes took ${first.ms.toFixed(0)} ms`);
    }
  }
  if ('err' in first) {
    const bad = classifyThrow(target, first.err);
    if (bad) return bad;
    return { status: 'rejected', code: (first.err as ParleyError).code, decodeMs: first.ms };
  }
  const v1 = first.value;
  const invalid = target.valid?.(v1);
  if (invalid !== undefined) return failText('invalid-value', invalid);
  const held = footprint(v1, input);
  const limit = (target.bytesPerInputByte ?? DEFAULT_BYTES_PER_INPUT_BYTE) * input.length + FOOTPRINT_SLACK_BYTES;
  if (held > limit) {
    return failText('over-allocation', `decoded value holds ~${held} bytes for ${input.length} input bytes`);
  }
  let e1: Uint8Array;
  try {
    e1 = target.encode(v1);
  } catch (err) {
    return fail('reencode-threw', err, 'the decoded value does not encode: ');
  }
  if (target.canonical && !bytesEqual(e1, input)) {
    return failText('non-canonical', 'accepted bytes other than the encoding of the value they decode to');
  }
  let v2: unknown;
  try {
    v2 = target.decode(e1);
  } catch (err) {
    return fail('redecode-threw', err, 'the re-encoded value does not decode: ');
  }
  const norm = target.normalize ?? ((v: unknown) => v);
  const diff = firstDifference(norm(v1), norm(v2));
  if (diff !== undefined)
    return failText('round-trip-mismatch', `decode(encode(decode(b))) differs from decode(b) at ${diff}`);
  let e2: Uint8Array;
  try {
    e2 = target.encode(v2);
  } catch (err) {
    return fail('reencode-threw', err, 'the re-decoded value does not encode: ');
  }
  if (!bytesEqual(e1, e2)) return failText('unstable-encoding', 'encode(decode(encode(v))) differs from encode(v)');
  return { status: 'accepted', decodeMs: first.ms };
}

/**
 * The generator's side: a valid value's encoding must decode to the value.
 * A typed rejection is counted (the encoder wrote what the decoder refuses), not failed.
 */
export function checkValid(target: AnyTarget, value: unknown, bytes: Uint8Array): Outcome {
  let decoded: unknown;
  try {
    decoded = target.decode(bytes);
  } catch (err) {
    const bad = classifyThrow(target, err);
    if (bad) return bad;
    if (target.strict) return fail('valid-rejected', err, 'the encoding of a valid value does not decode: ');
    return { status: 'rejected', code: (err as ParleyError).code, decodeMs: 0 };
  }
  const norm = target.normalize ?? ((v: unknown) => v);
  const diff = firstDifference(norm(value), norm(decoded));
  if (diff !== undefined) return failText('valid-mismatch', `a valid value decodes to a different value at ${diff}`);
  return checkInput(target, bytes);
}
