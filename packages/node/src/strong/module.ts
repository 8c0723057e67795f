/**
 * The strong module of a node: one Raft group member (or a non-member that
 * forwards), the call router, the session pool, and the public faces
 * `strong(ns)`, `locks(ns)` and `cluster`.
 *
 * @example
 * ```ts
 * const strong = await createStrongModule(ctx, { voters: [ctx.peerId] }); // a group of one
 * const jobs = strong.strong('jobs');
 * const { entry } = await jobs.set('cfg', { pct: 25 });
 * await jobs.set('cfg', { pct: 50 }, { ifVersion: entry.version });
 * const lock = await strong.locks('deploy').acquire('rollout', { owner: 'w1', ttl: 30 });
 * await jobs.set('k', 1, { fence: lock });
 * await strong.close();
 * ```
 */
import type { StrongBackend, StrongNamespaceUsage } from '@parley/coord';
import type { NodeContext } from '../context.js';
import type { StrongSide } from '../strong-side.js';
import { strongFaces } from './backend-api.js';
import { ClusterImpl } from './cluster.js';
import { LocalReads } from './local-reads.js';
import { type ResolvedStrongOptions, resolveStrongOptions, type StrongOptions } from './options.js';
import type { PipelinedReleases } from './pipelined-releases.js';
import { StrongCalls } from './read-write.js';
import { type ReplicaHooks, StrongReplica } from './replica.js';
import { StrongRouter } from './router.js';
import { SessionPool } from './sessions.js';
import { Watches } from './watch.js';

/** The Raft strong side, with the parts the simulator and tests look at. */
export interface StrongModule extends StrongSide {
  /** This member's replica (status, hooks for tests and the simulator). */
  readonly replica: StrongReplica;
  readonly router: StrongRouter;
  /** Serializable and bounded reads this member answers from its state. */
  readonly localReads: LocalReads;
  /** This node's client sessions (counts for tests and the simulator). */
  readonly sessions: SessionPool;
  /** Pipelined lock releases in flight, and how often an acquire overtook one (tests, the simulator). */
  readonly pipelinedReleases: PipelinedReleases;
  readonly options: ResolvedStrongOptions;
  /** The seam every strong call goes through (kind `'raft'`). */
  readonly backend: StrongBackend;
}

export interface StrongModuleExtras {
  /** Observes every applied command (simulator checkers, tests). */
  hooks?: ReplicaHooks;
}

/** Builds and starts the strong module. The context's transport must be started. */
export async function createStrongModule(
  ctx: NodeContext,
  options: StrongOptions = {},
  extras: StrongModuleExtras = {},
): Promise<StrongModule> {
  const resolved = resolveStrongOptions(ctx.peerId, options);
  const replica = new StrongReplica(ctx, resolved, extras.hooks);
  let router: StrongRouter | undefined;
  const localReads = new LocalReads(ctx, replica, resolved, {
    knowsNoLeader: () => router?.knowsNoLeader() ?? true,
    leaderHint: () => replica.leaderHint(),
  });
  router = new StrongRouter(ctx, replica, resolved, localReads);
  const pool = new SessionPool(ctx, router, resolved);
  const calls = new StrongCalls(ctx, router, pool, resolved, localReads);
  const watches = new Watches(ctx, replica, router, resolved);
  const cluster = new ClusterImpl(ctx, replica, router, resolved);
  router.start();
  localReads.start();
  await replica.start();
  router.replicaStarted();
  pool.start();
  let closed = false;
  const backend: StrongBackend = {
    kind: 'raft',
    write: (op, o) => calls.write(op, o),
    read: (op, o) => calls.read(op, o),
    watch: (filter, from, callback, onError) => watches.watch(filter, from, callback, onError),
    usage: async () => namespaceUsage(replica),
    async close() {
      if (closed) return;
      closed = true;
      watches.close();
      pool.close();
      localReads.close();
      router?.close();
      replica.stop();
    },
  };
  const faces = strongFaces(ctx, backend);
  return {
    strong: faces.strong,
    locks: faces.locks,
    cluster,
    replica,
    router,
    localReads,
    sessions: pool,
    pipelinedReleases: faces.releases,
    options: resolved,
    backend,
    status: faces.status,
    fault: () => replica.fatal,
    close: () => backend.close(),
  };
}

/** Keys and value bytes per namespace, from this member's state (pages of 1000, at most 20 per namespace). */
function namespaceUsage(replica: StrongReplica): StrongNamespaceUsage[] {
  const out: StrongNamespaceUsage[] = [];
  for (const name of [...replica.namespaceNames].sort()) {
    let keys = 0;
    let bytes = 0;
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const r = replica.sm.query({ type: 'list', namespace: name, limit: 1000, ...(cursor ? { cursor } : {}) });
      if (!r.ok || r.value.type !== 'list') break;
      keys += r.value.items.length;
      for (const e of r.value.items) bytes += JSON.stringify(e.value).length;
      if (r.value.nextCursor === null) break;
      cursor = r.value.nextCursor;
    }
    if (keys === 0) continue;
    out.push({ name, keys, bytes });
  }
  return out;
}
