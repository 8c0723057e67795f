/**
 * The sequential specification a linearizability check compares a history with.
 */
import { DecodeError } from '@parley/interface';
import type { History, HistoryValue, ProcessId } from './history.js';
import { canonicalText } from './value.js';

/** How an operation ended. `open`: never completed (treated like `info`). */
export type OperationStatus = 'ok' | 'fail' | 'info' | 'open';

/** One call: an `invoke` paired with its completion. */
export interface Operation {
  /** Position in the list returned by `pairOperations`. */
  readonly id: number;
  readonly process: ProcessId;
  readonly f: string;
  readonly key: string | undefined;
  /** The invoke's value. */
  readonly input: HistoryValue;
  /** The completion's value (`null` for open operations). */
  readonly output: HistoryValue;
  readonly status: OperationStatus;
  readonly error: string | undefined;
  /** Index of the invoke event in the history. */
  readonly callIndex: number;
  /** Index of the completion event; `Infinity` for `info` and open operations. */
  readonly returnIndex: number;
  readonly callTimeMs: number;
  readonly returnTimeMs: number;
}

/** Marks an output the client never learned (`info` or open operations). */
export const UNKNOWN: unique symbol = Symbol('unknown');
export type Unknown = typeof UNKNOWN;

/** The model's reading of an operation. */
export interface ModelOp<I, O> {
  readonly input: I;
  readonly output: O | Unknown;
}

/**
 * A sequential specification.
 *
 * `step` must be a pure function: given the state before the operation takes effect,
 * it returns the state after, or `undefined` when the observed output is impossible
 * in that state. States are never `undefined`, and the caller never mutates them.
 *
 * For an operation with an `UNKNOWN` output, `step` describes the outcome in which
 * it took effect; the checker itself covers the outcome in which it never did.
 */
export interface Model<S = unknown, I = unknown, O = unknown> {
  readonly name: string;
  /** One line for `--help` and reports. */
  readonly description: string;
  init(): S;
  /**
   * The model's view of an operation, or `null` to drop it (it certainly changed
   * nothing and observed nothing, e.g. most `fail`s). Throws `DecodeError` on an
   * operation the model does not know.
   */
  prepare(op: Operation): ModelOp<I, O> | null;
  step(state: S, input: I, output: O | Unknown): S | undefined;
  /**
   * A value identifying the state, equal for equal states (memoization key).
   * Defaults to the state itself when primitive, its JSON text otherwise.
   */
  stateKey?(state: S): string | number | boolean | null;
  /** True when operations on different keys are independent (checked one key at a time). */
  readonly partitionByKey: boolean;
  /**
   * Optional: a second look at one partition's operations (in the same order, one for
   * one) once all are known, e.g. to give one name to the values no other operation
   * observes, and a dominance relation valid for those operations. A rewriting must
   * not change which orders the model accepts.
   */
  preparePartition?(ops: readonly ModelOp<I, O>[]): PreparedPartition<S, I, O>;
}

/** A partition's operations as `Model.preparePartition` rewrote them. */
export interface PreparedPartition<S, I, O> {
  readonly ops: readonly ModelOp<I, O>[];
  /**
   * `dominates(a, b)`: every sequence of this partition's operations the model accepts
   * from `b` it also accepts from `a` (skipping, where it must, calls whose outcome is
   * unknown), ending in states that again dominate. The search then never linearizes
   * a call with an unknown outcome whose state after is dominated by the state before
   * (leaving it out keeps every option open), as it never linearizes one that changes
   * nothing.
   */
  dominates?(a: S, b: S): boolean;
}

/** Pairs each invoke with the next completion of the same process. Throws `DecodeError` on a malformed history. */
export function pairOperations(history: History): Operation[] {
  type Open = { index: number; f: string; key: string | undefined; input: HistoryValue; process: ProcessId };
  const open = new Map<ProcessId, Open>();
  const ops: { op: Operation; order: number }[] = [];
  const finish = (
    o: Open,
    status: OperationStatus,
    output: HistoryValue,
    error: string | undefined,
    returnIndex: number,
    returnTimeMs: number,
  ) => {
    ops.push({
      order: o.index,
      op: {
        id: 0,
        process: o.process,
        f: o.f,
        key: o.key,
        input: o.input,
        output,
        status,
        error,
        callIndex: o.index,
        returnIndex: status === 'info' || status === 'open' ? Number.POSITIVE_INFINITY : returnIndex,
        callTimeMs: history[o.index]!.timeMs,
        returnTimeMs,
      },
    });
  };
  for (let i = 0; i < history.length; i++) {
    const e = history[i]!;
    if (e.type === 'invoke') {
      const prev = open.get(e.process);
      // A process that invokes again without completing crashed: its call stays open.
      if (prev !== undefined) finish(prev, 'open', null, undefined, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
      open.set(e.process, { index: i, f: e.f, key: e.key, input: e.value, process: e.process });
      continue;
    }
    const o = open.get(e.process);
    if (o === undefined) {
      throw new DecodeError(`event ${i}: '${e.type}' of process ${String(e.process)} without an invoke`);
    }
    if (o.f !== e.f) {
      throw new DecodeError(`event ${i}: '${e.type} ${e.f}' completes '${o.f}' of process ${String(e.process)}`);
    }
    open.delete(e.process);
    finish(o, e.type, e.value, e.error, i, e.timeMs);
  }
  for (const o of open.values()) finish(o, 'open', null, undefined, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  ops.sort((a, b) => a.order - b.order);
  return ops.map(({ op }, id) => ({ ...op, id }));
}

// ---------------------------------------------------------------------------
// Helpers shared by the models.

export { sameValue } from './value.js';

/** A canonical text for a value (EDN, maps and sets sorted, typed), for state keys. */
export function canonicalKey(value: unknown): string {
  return canonicalText(value as HistoryValue);
}

/** The field of an object value, or undefined. */
export function field(value: HistoryValue, name: string): HistoryValue | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined; // EDN values other than keyword maps
  return Object.hasOwn(value, name) ? (value as { readonly [k: string]: HistoryValue })[name] : undefined;
}

export function unknownOp(model: string, op: Operation): DecodeError {
  return new DecodeError(`model '${model}' has no operation '${op.f}' (operation ${op.id}, process ${op.process})`);
}
