/**
 * `parley-entry`: Parley's strong entries with versions (set, CAS, create-only,
 * delete, claim, get). `parley-lease` and `parley-lock` are in ./parley-fenced.ts.
 * The operation formats are specified in docs/checkers.md.
 *
 * All three are checked one key at a time. A `fail` whose error code is an
 * observation (`version_mismatch`, `key_already_exists`, `key_not_found`,
 * `lock_held`, `lease_lost`, `fence_stale`) is checked against the state; any
 * other `fail` (`unavailable`, `not_leader`, ...) is dropped: it did not happen.
 */
import { DecodeError } from '@parley/interface';
import type { HistoryValue } from '../history.js';
import {
  canonicalKey,
  field,
  type Model,
  type ModelOp,
  type Operation,
  type PreparedPartition,
  sameValue,
  UNKNOWN,
  unknownOp,
} from '../model.js';
import { optStr, str } from './fields.js';

/** A strong entry: absent, or a value with its version (`null` = written by a call whose reply was lost). */
export type EntryState = null | { readonly value: HistoryValue; readonly version: string | null };

export type EntryInput =
  | { readonly f: 'get' }
  | {
      readonly f: 'set';
      readonly value: HistoryValue;
      readonly ifNotExists: boolean;
      readonly ifVersion: string | undefined;
    }
  | { readonly f: 'delete'; readonly ifVersion: string | undefined }
  | { readonly f: 'claim'; readonly value: HistoryValue };

/** What the client saw: a result, or an error code that is an observation. */
export type EntryOutput =
  | { readonly type: 'absent' }
  | { readonly type: 'entry'; readonly value: HistoryValue; readonly version: string }
  | { readonly type: 'written'; readonly version: string }
  | { readonly type: 'deleted'; readonly existed: boolean | undefined }
  /** A claim: won (created with `version`), or lost to the entry shown. */
  | { readonly type: 'claimed'; readonly won: boolean; readonly value: HistoryValue; readonly version: string }
  | { readonly type: 'error'; readonly code: 'key_already_exists' | 'version_mismatch' | 'key_not_found' };

const ENTRY_OBSERVED_ERRORS = new Set(['key_already_exists', 'version_mismatch', 'key_not_found']);

function entryPrepare(op: Operation): ModelOp<EntryInput, EntryOutput> | null {
  let input: EntryInput;
  switch (op.f) {
    case 'get':
      input = { f: 'get' };
      break;
    case 'set':
      input = {
        f: 'set',
        value: field(op.input, 'value') ?? null,
        ifNotExists: field(op.input, 'ifNotExists') === true,
        ifVersion: optStr(op, field(op.input, 'ifVersion'), 'ifVersion'),
      };
      break;
    case 'delete':
      input = { f: 'delete', ifVersion: optStr(op, field(op.input, 'ifVersion'), 'ifVersion') };
      break;
    case 'claim':
      input = { f: 'claim', value: field(op.input, 'value') ?? null };
      break;
    default:
      throw unknownOp('parley-entry', op);
  }
  if (op.status === 'info' || op.status === 'open') {
    // A read whose result is unknown observes nothing and changes nothing: drop it.
    return input.f === 'get' ? null : { input, output: UNKNOWN };
  }
  if (op.status === 'fail') {
    if (op.error === undefined || !ENTRY_OBSERVED_ERRORS.has(op.error)) return null;
    return { input, output: { type: 'error', code: op.error as 'key_already_exists' } };
  }
  switch (input.f) {
    case 'get':
      if (op.output === null) return { input, output: { type: 'absent' } };
      return {
        input,
        output: {
          type: 'entry',
          value: field(op.output, 'value') ?? null,
          version: str(op, field(op.output, 'version'), 'version'),
        },
      };
    case 'set':
      return { input, output: { type: 'written', version: str(op, field(op.output, 'version'), 'version') } };
    case 'delete': {
      const existed = field(op.output, 'existed');
      return { input, output: { type: 'deleted', existed: typeof existed === 'boolean' ? existed : undefined } };
    }
    case 'claim': {
      const won = field(op.output, 'won');
      if (typeof won !== 'boolean') throw new DecodeError(`operation ${op.id} (claim): won must be a boolean`);
      return {
        input,
        output: {
          type: 'claimed',
          won,
          value: won ? input.value : (field(op.output, 'value') ?? null),
          version: str(op, field(op.output, 'version'), 'version'),
        },
      };
    }
  }
}

/** Does the entry's version match `v`? A version that was never learned matches any. */
function versionMatches(state: EntryState, v: string): boolean {
  return state !== null && (state.version === null || state.version === v);
}

function entryStep(state: EntryState, input: EntryInput, output: EntryOutput | typeof UNKNOWN): EntryState | undefined {
  if (output !== UNKNOWN && output.type === 'error') {
    switch (output.code) {
      case 'key_not_found':
        return state === null ? state : undefined;
      case 'key_already_exists':
        return input.f === 'set' && input.ifNotExists && state !== null ? state : undefined;
      case 'version_mismatch': {
        if ((input.f !== 'set' && input.f !== 'delete') || input.ifVersion === undefined) return undefined;
        // A version we never learned could be anything: a mismatch is possible.
        if (state === null || state.version === null || state.version !== input.ifVersion) return state;
        return undefined;
      }
    }
  }
  switch (input.f) {
    case 'get': {
      if (output === UNKNOWN) return state;
      if (output.type === 'absent') return state === null ? state : undefined;
      if (output.type !== 'entry' || state === null || !sameValue(state.value, output.value)) return undefined;
      if (state.version === null) return { value: state.value, version: output.version };
      return state.version === output.version ? state : undefined;
    }
    case 'set': {
      if (input.ifNotExists && state !== null) return undefined;
      if (input.ifVersion !== undefined && !versionMatches(state, input.ifVersion)) return undefined;
      if (output === UNKNOWN) return { value: input.value, version: null };
      if (output.type !== 'written') return undefined;
      // Every write returns a fresh version.
      if (state !== null && state.version === output.version) return undefined;
      return { value: input.value, version: output.version };
    }
    case 'claim': {
      // The first claim creates the entry; later ones lose and see it.
      if (output === UNKNOWN) return state === null ? { value: input.value, version: null } : state;
      if (output.type !== 'claimed') return undefined;
      if (output.won) return state === null ? { value: input.value, version: output.version } : undefined;
      if (state === null || !sameValue(state.value, output.value)) return undefined;
      if (state.version === null) return { value: state.value, version: output.version };
      return state.version === output.version ? state : undefined;
    }
    case 'delete': {
      if (input.ifVersion !== undefined && !versionMatches(state, input.ifVersion)) return undefined;
      if (output !== UNKNOWN && output.type === 'deleted' && output.existed !== undefined) {
        if (output.existed !== (state !== null)) return undefined;
      }
      return null;
    }
  }
}

/**
 * The one value of every write no call observes: a `set` whose value no read, and no
 * lost claim, of the key returns. Only that such a write happened can matter (it moves
 * the version on, and a `get` returning any observed value rules it out as the last
 * write), never which unobserved value it wrote, so they share one value. Two writes
 * whose replies were lost then end in one state, and the search's twin rule keeps a
 * key with many of them decidable.
 */
export const UNOBSERVED_VALUE = '\u0000unobserved';

function entryPreparePartition(
  ops: readonly ModelOp<EntryInput, EntryOutput>[],
): PreparedPartition<EntryState, EntryInput, EntryOutput> {
  const observed = new Set<string>();
  for (const { output } of ops) {
    if (output !== UNKNOWN && (output.type === 'entry' || output.type === 'claimed')) {
      observed.add(canonicalKey(output.value));
    }
  }
  if (observed.has(canonicalKey(UNOBSERVED_VALUE))) return { ops };
  return {
    ops: ops.map((mop) =>
      mop.input.f === 'set' && !observed.has(canonicalKey(mop.input.value))
        ? { input: { ...mop.input, value: UNOBSERVED_VALUE }, output: mop.output }
        : mop,
    ),
  };
}

/**
 * Strong entries, per key: `get`, `set` with `ifNotExists` / `ifVersion`, `delete`
 * with `ifVersion`, `claim` (create-once, losers see the winner's entry).
 * Every successful write returns a fresh version.
 */
export const parleyEntryModel: Model<EntryState, EntryInput, EntryOutput> = {
  name: 'parley-entry',
  description: 'strong entries per key: get, set (ifNotExists, ifVersion), delete (ifVersion), claim; fresh versions',
  partitionByKey: true,
  init: () => null,
  prepare: entryPrepare,
  step: entryStep,
  preparePartition: entryPreparePartition,
};
