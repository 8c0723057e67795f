/**
 * `node.locks(ns)`: fenced locks over the node's strong backend. An acquire
 * with `wait` joins the lock's FIFO queue and resolves when granted
 * (or fails with `lock_held` once the wait ends); the grant's `fence` is a
 * FenceToken that strong writes accept until a newer holder exists. A
 * pipelined release is not waited for by the next acquire of its owner
 * (./pipelined-releases.ts).
 */
import type { LockGrant, LockInfo, Operation, OpResult, StrongBackend } from '@parley/coord';
import { InvalidArgumentError, isParleyError } from '@parley/interface';
import type { LockAcquireOptions, LockReleaseOptions, Locks } from '../api.js';
import type { NodeContext } from '../context.js';
import type { PipelinedReleases } from './pipelined-releases.js';

function expect<T extends OpResult['type']>(r: OpResult, type: T): Extract<OpResult, { type: T }> {
  if (r.type !== type) throw new InvalidArgumentError(`expected a '${type}' result, got '${r.type}'`);
  return r as Extract<OpResult, { type: T }>;
}

export class LocksImpl implements Locks {
  constructor(
    readonly name: string,
    private readonly calls: StrongBackend,
    private readonly ctx: NodeContext,
    private readonly releases: PipelinedReleases,
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
    // Read before sending: a release pipelined after this call starts is not waited for.
    const releasing = this.releases.settled(this.name, key, options.owner);
    try {
      let result: OpResult;
      try {
        result = await this.calls.write(op, { waitMs });
      } catch (err) {
        // Overtook its owner's own pipelined release: refused, nothing applied; again once it has settled.
        if (!releasing || !isParleyError(err, 'lock_held') || err.details.owner !== options.owner) throw err;
        this.releases.overtaken++;
        await releasing;
        result = await this.calls.write(op, { waitMs });
      }
      const grant = expect(result, 'lock').lock;
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

  /** Not async: a pipelined release is sent before this returns, and its promise is the one tracked. */
  release(key: string, options: LockReleaseOptions): Promise<boolean> {
    const pipelined = options.pipelined === true;
    let released: Promise<boolean>;
    try {
      const op = {
        type: 'lock_release',
        namespace: this.name,
        key,
        owner: options.owner,
        fence: options.fence,
      } as const;
      released = this.calls
        .write(op, pipelined ? { coalesce: true } : {})
        .then((r) => expect(r, 'lock_released').released);
    } catch (err) {
      return Promise.reject(err);
    }
    if (!pipelined) return released;
    this.releases.track(this.name, key, options.owner, released);
    released.catch((err: unknown) => {
      const code = isParleyError(err) ? err.code : String(err);
      this.ctx.logger.warn(
        { namespace: this.name, key, owner: options.owner, fence: options.fence, code },
        'pipelined lock release failed',
      );
    });
    return released;
  }

  async inspect(key: string): Promise<LockInfo> {
    return expect(await this.calls.read({ type: 'lock_inspect', namespace: this.name, key }), 'lock_info').lock;
  }
}
