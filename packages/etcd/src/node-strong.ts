/**
 * The strong side of a node on an existing etcd cluster
 * (`createNode({ strong: etcdStrong({ endpoints, prefix }) })`): the same
 * public faces (`strong(ns)`, `locks(ns)`, status) over `@parley/etcd`'s
 * backend, and a `cluster` that reports etcd's own leader, members and term.
 * etcd's membership is etcd's to manage (`etcdctl member add/remove`,
 * `move-leader`), so the membership calls reject with a typed error.
 */
import type { CoordLimits } from '@parley/coord';
import { InvalidArgumentError } from '@parley/interface';
import type { Cluster, ClusterStatus, NodeContext, StrongProvider, StrongSide } from '@parley/node';
import { strongFaces } from '@parley/node/backend';
import { EtcdBackend } from './backend.js';

/** `etcdStrong(options)`: where the node's strong side lives. */
export interface EtcdStrongOptions {
  /** Client URLs of the etcd members, e.g. `['http://127.0.0.1:2379']`. */
  endpoints: string[];
  /** Prefix of every key Parley writes (default `/parley`); distinct Parley clusters may share one etcd with distinct prefixes. */
  prefix?: string;
  /** Bound of a strong call when it gives none, in ms (default 10,000). */
  callTimeoutMs?: number;
  /** coord's limits (value size, keys per namespace, TTL bounds, …), as `raft.limits` for the built-in backend. */
  limits?: Partial<CoordLimits>;
}

/** Bound of one `cluster.status()` call. */
const STATUS_TIMEOUT_MS = 5_000;

function memberName(id: string, name: string): string {
  return `etcd:${name !== '' ? name : BigInt(id).toString(16)}`;
}

function managedByEtcd(what: string): never {
  throw new InvalidArgumentError(
    `${what}: this node's strong side runs on etcd, whose membership is managed by etcd (etcdctl member add/remove/promote, move-leader)`,
    { backend: 'etcd' },
  );
}

/** The etcd-backed strong module: faces, etcd's cluster view, close. */
export function createEtcdStrongSide(
  ctx: NodeContext,
  options: EtcdStrongOptions,
): StrongSide & { backend: EtcdBackend } {
  const backend = new EtcdBackend({
    endpoints: options.endpoints,
    ...(options.prefix !== undefined ? { prefix: options.prefix } : {}),
    ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
    clock: ctx.clock,
    scheduler: ctx.scheduler,
    random: ctx.random.fork(),
    logger: { warn: (obj, msg) => ctx.logger.warn(obj, msg) },
  });
  const faces = strongFaces(ctx, backend);
  const cluster: Cluster = {
    async status(): Promise<ClusterStatus> {
      const bound = { deadlineMs: ctx.clock.nowMs() + STATUS_TIMEOUT_MS };
      const status = await backend.calls.run('status', bound, (o) => backend.client.maintenance.status(o));
      const list = await backend.calls.run('member list', bound, (o) => backend.client.cluster.memberList({}, o));
      const names = new Map(list.members.map((m) => [m.ID, memberName(m.ID, m.name)]));
      return {
        self: ctx.peerId,
        leader: status.leader === '0' ? null : (names.get(status.leader) ?? memberName(status.leader, '')),
        term: Number(status.raftTerm),
        voters: list.members.filter((m) => !m.isLearner).map((m) => memberName(m.ID, m.name)),
        learners: list.members.filter((m) => m.isLearner).map((m) => memberName(m.ID, m.name)),
        commitIndex: Number(status.raftIndex),
        appliedIndex: Number(status.raftAppliedIndex ?? status.raftIndex),
        peers: [],
      };
    },
    addVoter: async () => managedByEtcd('addVoter'),
    addLearner: async () => managedByEtcd('addLearner'),
    promote: async () => managedByEtcd('promote'),
    removeVoter: async () => managedByEtcd('removeVoter'),
    transferLeadership: async () => managedByEtcd('transferLeadership'),
  };
  return {
    strong: faces.strong,
    locks: faces.locks,
    cluster,
    backend,
    status: faces.status,
    fault: () => undefined, // etcd keeps the strong state on its own disks
    close: () => backend.close(),
  };
}

/**
 * The strong side on an existing etcd v3 cluster, for `createNode({ strong })`.
 *
 * @example
 * ```ts
 * import { etcdStrong } from '@parley/etcd';
 * const node = await createNode({ strong: etcdStrong({ endpoints: ['http://127.0.0.1:2379'], prefix: '/parley' }) });
 * ```
 */
export function etcdStrong(options: EtcdStrongOptions): StrongProvider {
  return { kind: 'etcd', start: async (ctx) => createEtcdStrongSide(ctx, options) };
}
