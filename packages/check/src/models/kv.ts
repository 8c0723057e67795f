/** `kv`: Porcupine's key/value store, get / put / append per key. */
import { DecodeError } from '@parley/interface';
import type { HistoryValue } from '../history.js';
import { type Model, type Operation, UNKNOWN, unknownOp } from '../model.js';

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
