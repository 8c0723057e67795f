/**
 * How each call of Parley's node API reads as an operation of the
 * `parley-entry`, `parley-lease` and `parley-lock` models: the model, the
 * operation's name and input, what an answer reads as, and which error codes
 * are definite failures (any other error leaves the outcome unknown: `info`).
 * Written once here for every recorder of such calls: the user harness
 * (`@parley/testing`) and the simulator's node-strong workload.
 *
 * The answer types are the shapes of `@parley/node`'s results, stated
 * structurally so that this package needs nothing of the node.
 */
import type { HistoryValue } from '../history.js';

/** The three models Parley's strong calls are judged by. */
export type ParleyModelName = 'entry' | 'lease' | 'lock';

/** An answer the model reads as a failure with this code (an absent key from `get`, a `delete` of nothing). */
export class FailedAnswer {
  constructor(readonly code: string) {}
}

/** One API call as a model operation. */
export interface ParleyOperation<T> {
  readonly model: ParleyModelName;
  /** The model's operation name (`get`, `set`, `acquire`, `write`, …). */
  readonly f: string;
  readonly input: HistoryValue;
  /** What an answer reads as: the ok value, or a definite failure. */
  okValue(answer: T): HistoryValue | FailedAnswer;
  /** Error codes that are definite failures, each mapped to the code the model reads. */
  readonly observed: Readonly<Record<string, string>>;
}

/** The shape of an entry read (`strong(ns).get`). */
export interface EntryAnswer {
  readonly value: unknown;
  readonly version: string;
}

const none: Readonly<Record<string, string>> = {};
const leaseLost = { lease_lost: 'lease_lost' };
const value = (v: unknown) => v as HistoryValue;

/** `strong(ns).get(key)` of an entry. */
export function entryGet(): ParleyOperation<EntryAnswer | undefined> {
  return {
    model: 'entry',
    f: 'get',
    input: null,
    okValue: (e) =>
      e === undefined ? new FailedAnswer('key_not_found') : { value: value(e.value), version: e.version },
    observed: none,
  };
}

/** `strong(ns).set(key, value, { ifVersion?, ifNotExists? })`. */
export function entrySet(
  v: unknown,
  options: { readonly ifVersion?: string | undefined; readonly ifNotExists?: boolean | undefined } = {},
): ParleyOperation<{ readonly version: string }> {
  const input: Record<string, HistoryValue> = { value: value(v) };
  const observed: Record<string, string> = {};
  if (options.ifVersion !== undefined) {
    input.ifVersion = options.ifVersion;
    observed.version_mismatch = 'version_mismatch';
    observed.key_not_found = 'version_mismatch';
  }
  if (options.ifNotExists) {
    input.ifNotExists = true;
    observed.key_already_exists = 'key_already_exists';
  }
  return { model: 'entry', f: 'set', input, okValue: (r) => ({ version: r.version }), observed };
}

/** `strong(ns).delete(key, { ifVersion? })`. */
export function entryDelete(options: { readonly ifVersion?: string | undefined } = {}): ParleyOperation<boolean> {
  return {
    model: 'entry',
    f: 'delete',
    input: options.ifVersion !== undefined ? { ifVersion: options.ifVersion } : null,
    okValue: (existed) => (existed ? { existed: true } : new FailedAnswer('key_not_found')),
    observed: { key_not_found: 'key_not_found', version_mismatch: 'version_mismatch' },
  };
}

/** `strong(ns).claim(key, value)`. */
export function entryClaim(
  v: unknown,
): ParleyOperation<{ readonly won: boolean; readonly value?: unknown; readonly version: string }> {
  return {
    model: 'entry',
    f: 'claim',
    input: { value: value(v) },
    okValue: (r): HistoryValue =>
      r.won ? { won: true, version: r.version } : { won: false, value: value(r.value), version: r.version },
    observed: none,
  };
}

/** `strong(ns).lease(key, { holder })`. */
export function leaseAcquire(holder: string): ParleyOperation<{ readonly epoch: number }> {
  return {
    model: 'lease',
    f: 'acquire',
    input: { holder },
    okValue: (l) => ({ epoch: l.epoch }),
    observed: { lock_held: 'lock_held' },
  };
}

/** `strong(ns).get(key)` of a lease's key: who holds it, in which epoch. */
export function leaseGet(): ParleyOperation<EntryAnswer | undefined> {
  return {
    model: 'lease',
    f: 'get',
    input: null,
    okValue: (e): HistoryValue => {
      if (e === undefined) return null;
      const doc = e.value as { holder: string | null; epoch: number };
      return doc.holder === null ? { holder: null } : { holder: doc.holder, epoch: doc.epoch };
    },
    observed: none,
  };
}

/** `lease.renew()`, `lease.updateState()` (`write`) and `lease.release()` of the holder's epoch. */
export function leaseOwn(f: 'renew' | 'write' | 'release', holder: string, epoch: number): ParleyOperation<unknown> {
  return { model: 'lease', f, input: { holder, epoch }, okValue: () => ({}), observed: leaseLost };
}

/** `locks(ns).acquire(key, { owner })`. */
export function lockAcquire(owner: string): ParleyOperation<{ readonly fence: number }> {
  return {
    model: 'lock',
    f: 'acquire',
    input: { owner },
    okValue: (g) => ({ fence: g.fence }),
    observed: { lock_held: 'lock_held' },
  };
}

/** `locks(ns).renew(key, { owner, fence })`: an expired, not re-granted lock renews as `lease_lost`. */
export function lockRenew(owner: string, fence: number): ParleyOperation<unknown> {
  return {
    model: 'lock',
    f: 'renew',
    input: { owner, fence },
    okValue: () => ({}),
    observed: { fence_stale: 'fence_stale', lease_lost: 'lease_lost' },
  };
}

/** A write fenced by a lock (`strong(ns).set/delete(key, …, { fence })`). */
export function lockWrite(fence: number): ParleyOperation<unknown> {
  return { model: 'lock', f: 'write', input: { fence }, okValue: () => ({}), observed: { fence_stale: 'fence_stale' } };
}

/** `locks(ns).release(key, { owner, fence })`. */
export function lockRelease(owner: string, fence: number): ParleyOperation<boolean> {
  return {
    model: 'lock',
    f: 'release',
    input: { owner, fence },
    okValue: (released) => ({ released }),
    observed: none,
  };
}

/** `locks(ns).inspect(key)` (`get`). */
export function lockInspect(): ParleyOperation<{
  readonly holder: { readonly owner: string; readonly fence: number } | null;
}> {
  return {
    model: 'lock',
    f: 'get',
    input: null,
    okValue: (info) => (info.holder === null ? null : { owner: info.holder.owner, fence: info.holder.fence }),
    observed: none,
  };
}
