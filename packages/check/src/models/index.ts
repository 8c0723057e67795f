/**
 * The built-in linearizability models, one file each: `register` and
 * `cas-register` (./register.ts), `kv`, `mutex`, `parley-entry`, and
 * `parley-lease` / `parley-lock` (./parley-fenced.ts). The contract they
 * implement is ../model.ts. How Parley's API calls read as operations of the
 * three parley models: ./parley-operations.ts.
 */
import type { Model } from '../model.js';
import { kvModel } from './kv.js';
import { mutexModel } from './mutex.js';
import { parleyEntryModel } from './parley-entry.js';
import { parleyLeaseModel, parleyLockModel } from './parley-fenced.js';
import { casRegisterModel, registerModel } from './register.js';

export { kvModel } from './kv.js';
export { mutexModel } from './mutex.js';
export * from './parley-entry.js';
export * from './parley-fenced.js';
export * from './parley-operations.js';
export { casRegisterModel, registerModel } from './register.js';

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
