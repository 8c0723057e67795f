/**
 * The fence check of fenced entry writes (`set`/`delete` with
 * `fence: {namespace, key, token}`) on etcd, with coord's rules and errors
 * (coord's checkFence):
 *
 * - the lock slot is absent, or forgotten (free for longer than the idle
 *   retention, judged by its own deadlines): `fence_stale` (current 0);
 * - a newer fence was granted on it: `fence_stale` (current = last fence);
 * - a fence above the last one granted: `invalid_argument` (never granted);
 * - the last fence granted: the write may go, and the returned compare pins
 *   the slot key's mod_revision, so the write's transaction fails (and the
 *   entry code re-reads and checks again) if anything granted, renewed or
 *   released the lock since the read.
 *
 * A write fenced by the last fence passes whether or not its holder is
 * still live, as on the built-in backend: the promise is "rejected once a
 * newer fence was granted", not "only while the holder's TTL runs".
 *
 * Usage (entries.ts): read `keys.lock(fence.namespace, fence.key)` in the same
 * read as the entry, call `ctx.checkFence(fence, lockKv)`, and add the
 * returned compares to the write's transaction.
 */

import type { CoordLimits, FenceRef } from '@parley/coord';
import { checkFenceToken, checkKey, checkNamespace, lockName } from '@parley/coord/shared';
import { type Clock, FenceStaleError, InvalidArgumentError } from '@parley/interface';
import type { ICompare } from 'etcd3';
import type { FenceCheck } from './context.js';
import type { KeyLayout } from './keys.js';
import { decodeSlotKv } from './lock-io.js';
import { lockState } from './lock-records.js';

/** The FenceCheck of a backend (its key layout, limits and clock). */
export function makeFenceCheck(keys: KeyLayout, limits: Readonly<CoordLimits>, clock: Clock): FenceCheck {
  return (fence: FenceRef, lockKv): ICompare[] => {
    if (fence === null || typeof fence !== 'object') throw new InvalidArgumentError('fence must be an object');
    const namespace = checkNamespace(limits, fence.namespace);
    const key = checkKey(limits, fence.key);
    const token = checkFenceToken(fence.token);
    const name = lockName(namespace, key);
    if (!lockKv) throw new FenceStaleError(name, token, 0);
    const slot = decodeSlotKv(lockKv, limits);
    const { lastFence } = lockState({ revision: 0, slotKv: lockKv, slot, waiters: [] }, clock.nowMs(), limits);
    if (lastFence === 0) throw new FenceStaleError(name, token, 0);
    if (token > lastFence) {
      throw new InvalidArgumentError(`fence ${token} was never granted on '${name}'`, { fence: token, lastFence });
    }
    if (token < lastFence) throw new FenceStaleError(name, token, lastFence);
    return [{ key: keys.lock(namespace, key), target: 'Mod', result: 'Equal', mod_revision: lockKv.mod_revision }];
  };
}
