/**
 * `register` (Porcupine's etcd register) and `cas-register` (Knossos): one
 * register per key, read / write / cas.
 */
import { DecodeError } from '@parley/interface';
import type { HistoryValue } from '../history.js';
import { type Model, type ModelOp, type Operation, sameValue, UNKNOWN, type Unknown, unknownOp } from '../model.js';
import { canonicalText } from '../value.js';

type RegisterInput =
  | { readonly f: 'read' }
  | { readonly f: 'write'; readonly value: HistoryValue }
  | { readonly f: 'cas'; readonly from: HistoryValue; readonly to: HistoryValue };

function casArgs(model: string, op: Operation): { from: HistoryValue; to: HistoryValue } {
  const v = op.input;
  if (!Array.isArray(v) || v.length !== 2) {
    throw new DecodeError(`model '${model}': cas takes [old new], got ${canonicalText(v)} (operation ${op.id})`);
  }
  return { from: v[0] as HistoryValue, to: v[1] as HistoryValue };
}

function registerPrepare(
  model: string,
  op: Operation,
  failedCasObserves: boolean,
): ModelOp<RegisterInput, HistoryValue> | null {
  const unknown = op.status === 'info' || op.status === 'open';
  switch (op.f) {
    case 'read':
      // A failed read did not happen; a read whose result is unknown observes nothing and changes nothing.
      if (op.status === 'fail' || unknown) return null;
      return { input: { f: 'read' }, output: op.output };
    case 'write':
      if (op.status === 'fail') return null;
      return { input: { f: 'write', value: op.input }, output: unknown ? UNKNOWN : null };
    case 'cas': {
      const { from, to } = casArgs(model, op);
      if (op.status === 'fail' && !failedCasObserves) return null;
      return { input: { f: 'cas', from, to }, output: unknown ? UNKNOWN : op.status === 'ok' };
    }
    default:
      throw unknownOp(model, op);
  }
}

function registerStep(
  state: HistoryValue,
  input: RegisterInput,
  output: HistoryValue | Unknown,
  nilReadMatchesAny: boolean,
): HistoryValue | undefined {
  switch (input.f) {
    case 'read':
      if (output === UNKNOWN || (nilReadMatchesAny && output === null)) return state;
      return sameValue(state, output) ? state : undefined;
    case 'write':
      return input.value;
    case 'cas': {
      const matches = sameValue(state, input.from);
      if (output === UNKNOWN) return matches ? input.to : state;
      if (output === true) return matches ? input.to : undefined;
      return matches ? undefined : state;
    }
  }
}

/**
 * A register per key (one register when events carry no key) that starts empty (`null`): `read` → value (`null` when empty),
 * `write V`, `cas [A B]`. A `fail`ed cas is an observation — the compare failed,
 * the state was not A — as in Porcupine's etcd model; other `fail`s are dropped.
 */
export const registerModel: Model<HistoryValue, RegisterInput, HistoryValue> = {
  name: 'register',
  description: "a register per key, starts nil; read/write/cas; a failed cas saw state ≠ old (Porcupine's etcd)",
  partitionByKey: true,
  init: () => null,
  prepare: (op) => registerPrepare('register', op, true),
  step: (state, input, output) => registerStep(state, input, output, false),
};

/**
 * Knossos's cas-register, one per key (one register when events carry no key, as in
 * Knossos's own files): starts at 0, a read of `nil` matches any state, every `fail`
 * is dropped (it did not happen).
 */
export const casRegisterModel: Model<HistoryValue, RegisterInput, HistoryValue> = {
  name: 'cas-register',
  description:
    'a register per key, starts 0; read/write/cas; a nil read matches any state; fail = did not happen (Knossos)',
  partitionByKey: true,
  init: () => 0,
  prepare: (op) => registerPrepare('cas-register', op, false),
  step: (state, input, output) => registerStep(state, input, output, true),
};
