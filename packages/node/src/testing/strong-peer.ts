/**
 * A node as its own OS process, for the multi-process test and the strong
 * benchmarks: `fork('dist/strong/peer-process.js')` with the settings as one
 * JSON argument. The process starts `createNode` (libp2p on loopback,
 * LevelDB with fsync), reports `{type:'ready', peerId, addresses}` over IPC,
 * then runs workloads the parent asks for (`{type:'run', id, task}`) through
 * its own node and answers `{type:'result', id, ...}`. It never exits on its
 * own: the parent kills it (SIGKILL for a crash) or sends `{type:'close'}`.
 */
import { InvalidArgumentError, isParleyError } from '@parley/interface';
import type { Lease, StrongReadOptions } from '../api.js';
import { createNode } from '../node.js';
import type { StrongOptions } from '../strong/options.js';

export interface PeerProcessConfig {
  dataDir: string;
  listen: string[];
  bootstrap: string[];
  psk?: string;
  raft: StrongOptions;
  /** The lean channel (default on); false keeps requests and Raft on libp2p streams. */
  lean?: boolean;
}

export type PeerTask =
  /** `count` sequential writes by one client: latencies in ms. */
  | { kind: 'writes'; count: number; namespace: string }
  /** `clients` concurrent CAS loops (read, set ifVersion) for `durationMs`: committed swaps and conflicts. */
  | { kind: 'cas'; clients: number; durationMs: number; namespace: string }
  /** `clients` concurrent `get` loops over `keys` keys with `options` for `durationMs`: reads done, failures by code. */
  | {
      kind: 'reads';
      clients: number;
      durationMs: number;
      namespace: string;
      keys: number;
      options: StrongReadOptions;
    }
  /** Lock acquire + fenced write-free release cycles by one client for `durationMs`. */
  | { kind: 'locks'; durationMs: number; namespace: string }
  /** Writes until one succeeds: the ms from the start to that success. */
  | { kind: 'writeUntilOk'; namespace: string; timeoutMs: number }
  /** This node's view of the group. */
  | { kind: 'status' }
  /**
   * One public API call through this node: `strong(ns)[method](...args)`,
   * `locks(ns)[method](...args)`, or a method of a lease handle this process
   * keeps (`lease` from `strong(ns).lease` answers `{ leaseId, epoch }`).
   */
  | {
      kind: 'call';
      api: 'strong' | 'locks' | 'lease';
      namespace: string;
      method: string;
      args: unknown[];
      leaseId?: number;
    };

function send(msg: unknown): void {
  process.send?.(msg);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as PeerProcessConfig;
  const node = await createNode({
    dataDir: config.dataDir,
    listen: config.listen,
    bootstrap: config.bootstrap,
    ...(config.psk ? { psk: config.psk } : {}),
    ...(config.lean === false ? { lean: false } : {}),
    raft: config.raft,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  });
  send({ type: 'ready', peerId: node.peerId, addresses: node.addresses });

  const leases = new Map<number, Lease>();
  let nextLease = 1;
  const call = async (task: Extract<PeerTask, { kind: 'call' }>): Promise<Record<string, unknown>> => {
    const invoke = (target: unknown): Promise<unknown> => {
      const fn = (target as Record<string, unknown>)[task.method];
      if (typeof fn !== 'function') throw new InvalidArgumentError(`no method '${task.method}'`);
      return Promise.resolve((fn as (...a: unknown[]) => unknown).apply(target, task.args));
    };
    if (task.api === 'lease') {
      const lease = leases.get(task.leaseId ?? -1);
      if (!lease) throw new InvalidArgumentError(`no lease handle ${task.leaseId}`);
      return { value: (await invoke(lease)) ?? null };
    }
    const target = task.api === 'strong' ? node.strong(task.namespace) : node.locks(task.namespace);
    const value = await invoke(target);
    if (task.api === 'strong' && task.method === 'lease') {
      const lease = value as Lease;
      const leaseId = nextLease++;
      leases.set(leaseId, lease);
      return { value: { leaseId, epoch: lease.epoch } };
    }
    return { value: value ?? null };
  };

  const run = async (task: PeerTask): Promise<Record<string, unknown>> => {
    switch (task.kind) {
      case 'call':
        return call(task);
      case 'status':
        return { status: await node.cluster.status() };
      case 'writes': {
        const ns = node.strong(task.namespace);
        const latencies: number[] = [];
        for (let i = 0; i < task.count; i++) {
          const t0 = performance.now();
          await ns.set(`w${i % 64}`, { i });
          latencies.push(performance.now() - t0);
        }
        return { latencies };
      }
      case 'cas': {
        const ns = node.strong(task.namespace);
        const end = performance.now() + task.durationMs;
        let swaps = 0;
        let conflicts = 0;
        const client = async (c: number) => {
          const key = `cas${c}`;
          let version = (await ns.set(key, 0)).version;
          let n = 0;
          while (performance.now() < end) {
            try {
              version = (await ns.set(key, ++n, { ifVersion: version })).version;
              swaps++;
            } catch (err) {
              if (!isParleyError(err, 'version_mismatch')) throw err;
              conflicts++;
              version = (await ns.get(key))?.version ?? version;
            }
          }
        };
        const t0 = performance.now();
        await Promise.all(Array.from({ length: task.clients }, (_, c) => client(c)));
        return { swaps, conflicts, seconds: (performance.now() - t0) / 1000 };
      }
      case 'reads': {
        const ns = node.strong(task.namespace);
        const end = performance.now() + task.durationMs;
        let reads = 0;
        const failed: Record<string, number> = {};
        const client = async (c: number) => {
          for (let i = c; performance.now() < end; i += task.clients) {
            // Local reads may resolve without I/O: let timers and the network run now and then.
            if (i % 64 === c) await new Promise((r) => setImmediate(r));
            try {
              await ns.get(`r${i % task.keys}`, task.options);
              reads++;
            } catch (err) {
              const code = isParleyError(err) ? err.code : 'crash';
              failed[code] = (failed[code] ?? 0) + 1;
            }
          }
        };
        const t0 = performance.now();
        await Promise.all(Array.from({ length: task.clients }, (_, c) => client(c)));
        return { reads, failed, seconds: (performance.now() - t0) / 1000 };
      }
      case 'locks': {
        const locks = node.locks(task.namespace);
        const end = performance.now() + task.durationMs;
        let cycles = 0;
        const t0 = performance.now();
        while (performance.now() < end) {
          const grant = await locks.acquire('bench', { owner: 'bench', ttl: 10 });
          await locks.release('bench', { owner: 'bench', fence: grant.fence });
          cycles++;
        }
        return { cycles, seconds: (performance.now() - t0) / 1000 };
      }
      case 'writeUntilOk': {
        const ns = node.strong(task.namespace);
        const t0 = performance.now();
        for (;;) {
          try {
            await ns.set('failover', Date.now(), { timeoutMs: 2_000 });
            return { ms: performance.now() - t0 };
          } catch (err) {
            if (!isParleyError(err) || !err.retryable || performance.now() - t0 > task.timeoutMs) throw err;
          }
        }
      }
    }
  };

  process.on('message', (msg: { type: string; id?: number; task?: PeerTask }) => {
    if (msg.type === 'close') {
      node.close().finally(() => process.exit(0));
      return;
    }
    if (msg.type !== 'run' || !msg.task) return;
    run(msg.task).then(
      (r) => send({ type: 'result', id: msg.id, ok: true, ...r }),
      (err) =>
        send({
          type: 'result',
          id: msg.id,
          ok: false,
          error: String(err),
          code: isParleyError(err) ? err.code : undefined,
        }),
    );
  });
}

main().catch((err) => {
  process.stderr.write(`peer process failed: ${String(err)}\n`);
  process.exit(1);
});
