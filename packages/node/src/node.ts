/**
 * `createNode`: builds the node's context (identity, data directory lock,
 * stores, transport, clock, scheduler, random, logger, events) once, then
 * wires the modules onto it. Everything outside the process enters through
 * the seams in `NodeOptions`, so the simulator runs this same code.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  Emitter,
  InvalidArgumentError,
  isParleyError,
  type RaftLogStorage,
  SeededRandom,
  systemClock,
  systemScheduler,
  TimeoutError,
  type Transport,
} from '@parley/interface';
import {
  createLibp2pTransport,
  type Libp2pTransport,
  loadOrCreatePrivateKey,
  loadOrCreatePsk,
  loadPsk,
  validatePsk,
} from '@parley/net';
import { openLevelKV, openLevelRaftLog, storageErrorOf } from '@parley/storage';
import type { EventualNamespace, NodeHealth, NodeStatus, ParleyNode, StorageFault } from './api.js';
import type { NodeContext, NodeEvents, NodeLogger, NodeStorage } from './context.js';
import { lockDataDir } from './data-dir-lock.js';
import { EventualModule } from './eventual/index.js';
import { GroupCommit } from './group-commit.js';
import { defaultLogger, netLogger } from './logger.js';
import type { NodeOptions } from './options.js';
import { raftStrong } from './strong/provider.js';
import type { StrongProvider, StrongSide } from './strong-side.js';

export const DEFAULT_LISTEN = ['/ip4/127.0.0.1/tcp/0'];
export const DEFAULT_DATA_DIR = './.parley';
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

/** A node with its context and modules exposed, for tests and the simulator: `internals(node)`. */
export interface ParleyNodeInternals extends ParleyNode {
  readonly context: NodeContext;
  readonly eventualModule: EventualModule;
  readonly commits: GroupCommit;
}

/** The nodes `createNode` made, so `internals` refuses anything else. */
const made = new WeakSet<ParleyNode>();

/**
 * A node's context and modules (`@parley/node/testing`): for tests and the
 * simulator, which look inside; `createNode`'s type shows users `ParleyNode` only.
 */
export function internals(node: ParleyNode): ParleyNodeInternals {
  if (!made.has(node)) throw new InvalidArgumentError('internals: not a node made by createNode');
  return node as ParleyNodeInternals;
}

/**
 * Creates and starts a node. With no options: data in `./.parley`, listening
 * on loopback only, a cluster key created in the data directory, no peers
 * needed — ready at once.
 *
 * @example
 * ```ts
 * const node = await createNode();
 * const flags = node.eventual('deploy');
 * await flags.set('rollout', { pct: 25 }, { ttl: 600 });
 * (await flags.get('rollout'))?.value; // { pct: 25 }
 * await node.close();
 * ```
 */
export async function createNode(options: NodeOptions = {}): Promise<ParleyNode> {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options must be an object');
  const logger: NodeLogger = options.logger ?? defaultLogger();
  const clock = options.clock ?? systemClock;
  const scheduler = options.scheduler ?? systemScheduler;
  const random = options.random ?? new SeededRandom(randomBytes(6).readUIntBE(0, 6));
  const closeTimeoutMs = options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS;
  if (!Number.isSafeInteger(closeTimeoutMs) || closeTimeoutMs < 1) {
    throw new InvalidArgumentError('closeTimeoutMs must be a positive integer');
  }

  // Cleanups run in reverse order if creation fails half-way, and on close.
  const cleanups: Array<() => Promise<void> | void> = [];
  const undo = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch (err) {
        logger.warn({ err: String(err) }, 'node: cleanup failed');
      }
    }
  };

  try {
    const needsDisk = options.storage === undefined || options.transport === undefined;
    const dataDir = needsDisk ? resolve(options.dataDir ?? DEFAULT_DATA_DIR) : null;
    if (dataDir !== null) {
      try {
        mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      } catch (err) {
        throw storageErrorOf(dataDir, err);
      }
      cleanups.push(await lockDataDir(dataDir));
    }

    let storage: NodeStorage;
    if (options.storage) {
      storage = options.storage;
    } else {
      const kv = await openLevelKV({ path: join(dataDir as string, 'kv') });
      cleanups.push(() => kv.close());
      const raftLog: RaftLogStorage = await openLevelRaftLog({ path: join(dataDir as string, 'raft') });
      cleanups.push(() => raftLog.close());
      storage = { kv, raftLog };
    }

    let transport: Transport;
    let listening: Libp2pTransport | undefined;
    if (options.transport) {
      transport = options.transport;
    } else {
      const dir = dataDir as string;
      const privateKey = await loadOrCreatePrivateKey(join(dir, 'peer.key')).catch((err: unknown) => {
        throw storageErrorOf(dir, err);
      });
      let psk: Uint8Array | undefined;
      if (options.psk instanceof Uint8Array) {
        validatePsk(options.psk);
        psk = options.psk;
      } else if (typeof options.psk === 'string') {
        psk = await loadPsk(options.psk);
      } else if (options.psk !== undefined) {
        throw new InvalidArgumentError('psk must be the key bytes or the path of its file');
      } else if (!options.allowList && !options.openCluster) {
        psk = await loadOrCreatePsk(join(dir, 'cluster.psk')).catch((err: unknown) => {
          throw storageErrorOf(dir, err);
        });
      }
      listening = await createLibp2pTransport({
        listen: options.listen ?? DEFAULT_LISTEN,
        bootstrap: options.bootstrap ?? [],
        privateKey,
        psk,
        allowPeers: options.allowList,
        openCluster: options.openCluster ?? false,
        ...(options.lean !== undefined ? { lean: options.lean } : {}),
        logger: netLogger(logger),
      });
      transport = listening;
    }

    const events = new Emitter<NodeEvents>((err) => logger.warn({ err: String(err) }, 'node: an event listener threw'));
    const context: NodeContext = {
      peerId: transport.peerId,
      transport,
      clock,
      scheduler,
      random,
      logger,
      storage,
      events,
      dataDir,
    };
    const commits = new GroupCommit(storage.kv, clock, events, logger);

    // ---- modules: the one place where the node's modules are wired ----
    const eventual = new EventualModule(context, options.eventual, commits);
    // --------------------------------------------------------------------

    await transport.start();
    cleanups.push(() => transport.stop());
    const provider = strongProvider(options);
    const strong: StrongSide = await provider.start(context);
    cleanups.push(() => strong.close());

    let closing: Promise<void> | undefined;
    const node: ParleyNodeInternals = {
      peerId: transport.peerId,
      get addresses() {
        return listening ? listening.addresses() : [];
      },
      events,
      context,
      eventualModule: eventual,
      commits,
      eventual: (namespace: string): EventualNamespace => eventual.namespace(namespace),
      strong: (namespace: string) => strong.strong(namespace),
      locks: (namespace: string) => strong.locks(namespace),
      get cluster() {
        return strong.cluster;
      },
      health(): NodeHealth {
        const faults: StorageFault[] = [];
        const kv = commits.fault;
        if (kv) faults.push({ store: 'kv', code: kv.code, message: kv.message });
        const raft = strong.fault();
        if (raft !== undefined) {
          faults.push({
            store: 'raft',
            code: isParleyError(raft) ? raft.code : 'storage_failed',
            message: String((raft as Error)?.message ?? raft),
          });
        }
        return { faults };
      },
      async status(): Promise<NodeStatus> {
        const strongStatus = await strong.status();
        return {
          faults: this.health().faults,
          peerId: transport.peerId,
          replicaId: transport.peerId,
          dataDir,
          listen: listening ? listening.addresses() : [],
          peers: transport.peers(),
          namespaces: [...eventual.status(), ...strongStatus],
        };
      },
      close(): Promise<void> {
        closing ??= (async () => {
          let timer: (() => void) | undefined;
          const bound = new Promise<'timeout'>((r) => {
            timer = scheduler.after(closeTimeoutMs, () => r('timeout'));
          });
          const orderly = (async () => {
            await eventual.close();
            await strong.close();
            await commits.close();
          })();
          const outcome = await Promise.race([orderly.then(() => 'done' as const), bound]);
          timer?.();
          await undo();
          if (outcome === 'timeout') {
            throw new TimeoutError(`node did not close within ${closeTimeoutMs} ms; stopped anyway`);
          }
        })();
        return closing;
      },
    };
    made.add(node);
    return node;
  } catch (err) {
    await undo();
    throw err;
  }
}

/**
 * The strong side `options` ask for: `strong` (a provider: `raftStrong(…)`,
 * `etcdStrong(…)` from @parley/etcd), else the built-in Raft group with
 * `raft`'s settings (the default: a group of one).
 */
function strongProvider(options: NodeOptions): StrongProvider {
  const { strong, raft } = options;
  if (strong === undefined) return raftStrong(raft);
  if (strong === null || typeof strong !== 'object' || typeof (strong as StrongProvider).start !== 'function') {
    const etcd = strong !== null && typeof strong === 'object' && 'etcd' in strong;
    throw new InvalidArgumentError(
      etcd
        ? "strong: { etcd } moved: pass strong: etcdStrong({ endpoints, prefix }) from '@parley/etcd'"
        : 'strong must be a strong-side provider: raftStrong(options) or etcdStrong(options) from @parley/etcd',
    );
  }
  if (raft !== undefined && strong.kind === 'raft') {
    throw new InvalidArgumentError('give the Raft options once: strong: raftStrong(options), or raft alone');
  }
  return strong; // `raft` is unused on another backend, as its doc says
}
