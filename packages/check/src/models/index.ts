/**
 * Classic models: `register` (Porcupine's etcd register), `cas-register` (Knossos),
 * `kv` (Porcupine's key/value store) and `mutex`.
 */
import { DecodeError } from '@parley/interface';
import type { HistoryValue } from './history.js';
import { type Model, type ModelOp, type Operation, sameValue, UNKNOWN, type Unknown, unknownOp } from './model.js';
import { parleyEntryModel, parleyLeaseModel, parleyLockModel } from './parley-models.js';
import { canonicalText } from './value.js';

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

type KvInput = { readonly f: 'get' } | { readonly f: 'put' | 'append'; readonly value: string };

function kvString(op: Operation, v: HistoryValue): string {
  if (typeof v === 'string') return v;
  if (v === null) return '';
  throw new DecodeError(`model 'kv': operation ${op.id} carries a non-string value`);
}

/**
 * Porcupine's key/value model: every key starts as `""`; `get` returns the exact
 * string, `put` replaces it, `append` concatenates. Checked one key at a time.
 */
export const kvModel: Model<string, KvInput, string> = {
  name: 'kv',
  description: 'keys start as ""; get/put/append; checked per key (Porcupine kv)',
  partitionByKey: true,
  init: () => '',
  prepare: (op) => {
    if (op.status === 'fail') return null;
    const unknown = op.status === 'info' || op.status === 'open';
    switch (op.f) {
      case 'get':
        if (unknown) return null; // observes nothing, changes nothing
        return { input: { f: 'get' }, output: kvString(op, op.output) };
      case 'put':
      case 'append':
        return { input: { f: op.f, value: kvString(op, op.input) }, output: unknown ? UNKNOWN : '' };
      default:
        throw unknownOp('kv', op);
    }
  },
  step: (state, input, output) => {
    switch (input.f) {
      case 'get':
        return output === UNKNOWN || output === state ? state : undefined;
      case 'put':
        return input.value;
      case 'append':
        return state + input.value;
    }
  },
};

/**
 * A mutex per key (one mutex when events carry no key), starting free:
 * `acquire` is legal only when free, `release` only when held. `fail`s are dropped.
 */
export const mutexModel: Model<boolean, 'acquire' | 'release', null> = {
  name: 'mutex',
  description: 'acquire/release, starts free; acquire needs free, release needs held',
  partitionByKey: true,
  init: () => false,
  prepare: (op) => {
    if (op.status === 'fail') return null;
    if (op.f !== 'acquire' && op.f !== 'release') throw unknownOp('mutex', op);
    return { input: op.f, output: op.status === 'ok' ? null : UNKNOWN };
  },
  step: (locked, input) => (input === 'acquire' ? (locked ? undefined : true) : locked ? false : undefined),
};

/** Every built-in model by name (the names `parley-check --model` accepts). */
export const MODELS: Readonly<Record<string, Model>> = {
  register: registerModel as unknown as Model,
  'cas-register': casRegisterModel as unknown as Model,
  kv: kvModel as unknown as Model,
  mutex: mutexModel as unknown as Model,
  'parley-entry': parleyEntryModel as unknown as Model,
  'parley-lease': parleyLeaseModel as unknown as Model,
  'parley-lock': parleyLockModel as unknown as Model,
};

/** The built-in model called `name`, or undefined. */
export function getModel(name: string): Model | undefined {
  return Object.hasOwn(MODELS, name) ? MODELS[name] : undefined;
}
