/**
 * A blocking acquire's wait, once its waiter key is queued: until the lock
 * is handed to it or its wait ends. The call wakes on etcd watch events (the
 * slot and the lock's waiter keys), at the deadlines that can change its
 * turn (the holder's expiry, the waits of those ahead of it, its own wait)
 * and at least every POLL_MS, so a watch that is slow to reconnect delays a
 * grant by at most that. Each wake re-reads the lock: a grant marker on its
 * key means granted; a free slot with it first in line, it takes the lock
 * itself; its wait over, it deletes its key (a grant that raced in is kept
 * and returned: no lock is left to a caller that gave up). Every etcd call is
 * bounded by the call's deadline, so the wait never hangs on an unreachable
 * etcd: it fails with `timeout`/`unavailable`, and the key it leaves behind
 * counts as given up once its wait deadline passes.
 */
import type { LockGrant, OpResult } from '@parley/coord';
import { isParleyError } from '@parley/interface';
import type { Watcher } from 'etcd3';
import type { EtcdContext, OpCall } from './context.js';
import { commit, contention, grantToWaiter, heldError, readLock } from './lock-io.js';
import { grantView, lockState, type WaiterKv } from './lock-records.js';

/** Longest sleep between two reads of a waiting acquire. */
export const POLL_MS = 1_000;
/** Wake-ups of one wait before it gives up as contention (a wait of an hour at POLL_MS needs 3,600). */
const MAX_WAKEUPS = 100_000;
/** Bound of the last attempt to delete the waiter key of a wait that failed (etcd unreachable). */
const ABANDON_BOUND_MS = 2_000;

/** Resolves on the first of: a watch event, `ms` elapsed. */
class Wakeup {
  private fire: (() => void) | undefined;
  private pending = false;

  signal(): void {
    this.pending = true;
    this.fire?.();
  }

  wait(ctx: EtcdContext, ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const cancel = ctx.calls.scheduler.after(Math.max(0, ms), () => done());
      const done = () => {
        cancel();
        this.fire = undefined;
        this.pending = false;
        resolve();
      };
      this.fire = done;
    });
  }
}

function watchLock(ctx: EtcdContext, namespace: string, key: string, fromRevision: number, wake: Wakeup): Watcher[] {
  const start = String(fromRevision + 1);
  const builders = [
    ctx.calls.client.watch().key(ctx.keys.lock(namespace, key)).startRevision(start),
    ctx.calls.client.watch().prefix(ctx.keys.lockWaiters(namespace, key)).startRevision(start),
  ];
  return builders.map((b) => {
    const w = b.watcher();
    w.on('data', () => wake.signal());
    // Errors (etcd unreachable, compaction) only make the wait fall back to polling.
    w.on('error', () => undefined);
    return w;
  });
}

function grantOf(namespace: string, key: string, mine: WaiterKv, fenceHolder: LockGrant | undefined): LockGrant {
  const g = mine.record.granted as { fence: number; acquiredAt: number };
  if (fenceHolder && fenceHolder.fence === g.fence) return fenceHolder;
  return {
    namespace,
    key,
    owner: mine.record.owner,
    fence: g.fence,
    acquiredAt: g.acquiredAt,
    expiresAt: g.acquiredAt + mine.record.ttlSeconds * 1000,
    ttlSeconds: mine.record.ttlSeconds,
    metadata: mine.record.metadata,
  };
}

/**
 * The wait failed (etcd unreachable, the call's bound spent): one last,
 * separately bounded attempt to delete the waiter key, unless it was granted
 * meanwhile. Not awaited; if it fails too, the key counts as given up at its
 * wait deadline and its cleanup lease removes it.
 */
function abandon(ctx: EtcdContext, w: WaiterKv): void {
  void ctx.calls
    .txn(
      {
        compares: [{ key: w.key, target: 'Mod', result: 'Equal', mod_revision: w.modRevision }],
        success: [{ request_delete_range: { key: w.key } }],
      },
      { deadlineMs: ctx.clock.nowMs() + ABANDON_BOUND_MS },
    )
    .catch(() => undefined);
}

/** Waits for the grant of waiter `id` (queued at etcd revision `queuedAt`); resolves with it or rejects `lock_held`. */
export async function waitForGrant(
  ctx: EtcdContext,
  namespace: string,
  key: string,
  id: string,
  queuedAt: number,
  call: OpCall,
): Promise<OpResult> {
  const wake = new Wakeup();
  const watchers = watchLock(ctx, namespace, key, queuedAt, wake);
  let lastSeen: WaiterKv | undefined;
  try {
    for (let i = 0; i < MAX_WAKEUPS; i++) {
      const s = await readLock(ctx, namespace, key, call);
      const now = ctx.clock.nowMs();
      const st = lockState(s, now, ctx.limits);
      const mine = s.waiters.find((w) => w.id === id);
      lastSeen = mine;
      if (mine?.record.granted) {
        const holder = s.slot?.holder ? grantView(namespace, key, s.slot.holder) : undefined;
        const lock = grantOf(namespace, key, mine, holder);
        // The marker has done its work; a later sweep (or its cleanup lease) removes it if this
        // delete fails, and the grant is the caller's either way.
        await ctx.calls
          .txn(
            {
              compares: [{ key: mine.key, target: 'Mod', result: 'Equal', mod_revision: mine.modRevision }],
              success: [{ request_delete_range: { key: mine.key } }],
            },
            call,
          )
          .catch(() => undefined);
        return { type: 'lock', lock };
      }
      // Gone without a grant: someone judged this wait over and swept it.
      if (!mine) throw heldError(namespace, key, st);
      if (mine.record.waitDeadlineAt <= now) {
        const out = await ctx.calls.txn(
          {
            compares: [{ key: mine.key, target: 'Mod', result: 'Equal', mod_revision: mine.modRevision }],
            success: [{ request_delete_range: { key: mine.key } }],
          },
          call,
        );
        if (out.succeeded) throw heldError(namespace, key, st);
        continue; // granted meanwhile: the next read returns it
      }
      const first = st.live[0];
      if (!st.holder && first) {
        const g = await grantToWaiter(ctx, namespace, key, s, st, first, now, call);
        await commit(ctx, { compares: g.compares, success: g.success }, call);
        continue;
      }
      let nextMs = Math.min(mine.record.waitDeadlineAt, now + POLL_MS, call.deadlineMs);
      if (st.holder) nextMs = Math.min(nextMs, st.holder.expiresAt);
      for (const w of st.live) {
        if (w.createRevision >= mine.createRevision) break;
        nextMs = Math.min(nextMs, w.record.waitDeadlineAt);
      }
      await wake.wait(ctx, nextMs - now);
    }
    throw contention(namespace, key);
  } catch (err) {
    if (lastSeen && !lastSeen.record.granted && !isParleyError(err, 'lock_held')) abandon(ctx, lastSeen);
    throw err;
  } finally {
    for (const w of watchers) void w.cancel().catch(() => undefined);
  }
}
