/** Field readers shared by the Parley models: a typed field or a DecodeError naming the operation. */
import { DecodeError } from '@parley/interface';
import type { HistoryValue } from '../history.js';
import type { Operation } from '../model.js';

export function str(op: Operation, v: HistoryValue | undefined, what: string): string {
  if (typeof v !== 'string') throw new DecodeError(`operation ${op.id} (${op.f}): ${what} must be a string`);
  return v;
}

export function optStr(op: Operation, v: HistoryValue | undefined, what: string): string | undefined {
  return v === undefined || v === null ? undefined : str(op, v, what);
}

export function int(op: Operation, v: HistoryValue | undefined, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
    throw new DecodeError(`operation ${op.id} (${op.f}): ${what} must be an integer`);
  }
  return v;
}
