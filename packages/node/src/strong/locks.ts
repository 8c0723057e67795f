/**
 * `node.locks(ns)`: fenced locks over the node's strong backend. An acquire
 * with `wait` joins the lock's FIFO queue and resolves when granted
 * (or fails with `lock_held` once the wait ends); the grant's `fence` is a
 * FenceToken that strong writes accept until a newer holder exists.
 */
import type { LockGrant, LockInfo, Operation, OpResult, StrongBackend } from '@parley/coord';
import { InvalidArgumentError } from '@parley/interface';
import type { LockAcquireOptions, Locks } from '../api.js';
import type { NodeContext } from '../context.js';

function expect<T extends OpResult['type']>(r: OpResult, type: T): Extract<OpResult, { type: T }> {
  if (r.type !== type) throw new InvalidArgumentError(`expected a '${type}' result, got '${r.type}'`);
  return r as Extract<OpResult, { type: T }>;
}

export class LocksImpl implements Locks {
  constructor(
    readonly name: string,
    private readonly calls: StrongBackend,
    private readonly ctx: NodeContext,
  ) {}

  async acquire(key: string, options: LockAcquireOptions): Promise<LockGrant> {
    const op: Extract<Operation, { type: 'lock_acquire' }> = {
      type: 'lock_acquire',
      namespace: this.name,
      key,
      owner: options.owner,
    };
    if (options.ttl !== undefined) op.ttlSeconds = options.ttl;
    if (options.metadata !== undefined) op.metadata = options.metadata;
    const wait = options.wait ?? 0;
    if (wait !== 0) op.waitSeconds = wait;
    const startedMs = this.ctx.clock.nowMs();
    const waitMs = Number.isFinite(wait) && wait > 0 ? wait * 1000 : 0;
    try {
      const grant = expect(await this.calls.write(op, { waitMs }), 'lock').lock;
      if (waitMs > 0) this.emitWait(key, startedMs, true);
      return grant;
    } catch (err) {
      if (waitMs > 0) this.emitWait(key, startedMs, false);
      throw err;
    }
  }

  private emitWait(key: string, startedMs: number, granted: boolean): void {
    this.ctx.events.emit('lock:wait', {
      namespace: this.name,
      key,
      ms: Math.max(0, this.ctx.clock.nowMs() - startedMs),
      granted,
    });
  }

  async renew(key: string, options: { owner: string; fence: number; ttl?: number }): Promise<LockGrant> {
    const op: Extract<Operation, { type: 'lock_renew' }> = {
      type: 'lock_renew',
      namespace: this.name,
      key,
      owner: options.owner,
      fence: options.fence,
    };
    if (options.ttl !== undefined) op.ttlSeconds = options.ttl;
    return expect(await this.calls.write(op), 'lock').lock;
  }

  async release(key: string, options: { owner: string; fence: number }): Promise<boolean> {
    const r = await this.calls.write({
      type: 'lock_release',
      namespace: this.name,
      key,
      owner: options.owner,
      fence: options.fence,
    });
    return expect(r, 'lock_released').released;
  }

  async inspect(key: string): Promise<LockInfo> {
    return expect(await this.calls.read({ type: 'lock_inspect', namespace: this.name, key }), 'lock_info').lock;
  }
}
