/**
 * A fuzz target: one decoder with the encoder it inverts, a generator of
 * valid values, and what "equal" means for its values.
 */
import type { ErrorCode } from '@parley/interface';
import type { Gen } from './gen.js';

export interface Target<V = unknown> {
  /** `package.decoder`, e.g. `crdt.decodeDelta`. */
  readonly name: string;
  /** ParleyError codes the decoder may throw on bad input (usually `decode_error`). */
  readonly codes: readonly ErrorCode[];
  /** A valid value. It may exceed a documented limit; the encoder then throws a ParleyError and it is skipped. */
  generate(g: Gen): V;
  encode(value: V): Uint8Array;
  decode(bytes: Uint8Array): V;
  /** The form two values are compared in (sets sorted, class instances as plain data). Default: the value. */
  normalize?(value: V): unknown;
  /** Where the JSON text begins, when everything after a fixed header is JSON. */
  readonly jsonStart?: number;
  /** Applied to most mutated inputs to get past an integrity check (storage: recompute the checksum). */
  repair?(bytes: Uint8Array): Uint8Array;
  /** A check of the decoded value's domain (terms are integers, keys non-empty): a message when it fails. */
  valid?(value: V): string | undefined;
  /**
   * The generator stays within every documented limit, so the encoder refusing a generated value, or the
   * decoder refusing its encoding, is a failure too (`encoder-threw`, `valid-rejected`).
   */
  readonly strict?: boolean;
  /** The decoder promises one encoding per value: it must reject any other byte string. */
  readonly canonical?: boolean;
  /** Relative share of a run's inputs (default 1): slow decoders get less so a run fits its time. */
  readonly share?: number;
  /** Largest decoded-value footprint per input byte (default 32; see equal.ts `footprint`). */
  readonly bytesPerInputByte?: number;
}

/** Raised by a target's own invariant checks (stream readers); always counts as a contract failure. */
export class InvariantError extends Error {
  override readonly name = 'InvariantError';
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds targets of every value type.
export type AnyTarget = Target<any>;
