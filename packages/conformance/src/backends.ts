/**
 * The backends the conformance suite runs against. A `BackendUnderTest`
 * starts fresh Parley nodes whose strong side is that backend: the built-in
 * Raft group (a group of one over memory storage), or etcd (a unique key
 * prefix per node on a shared loopback cluster). The eventual side of every
 * node runs on an in-memory transport: the suite is about the strong side.
 */
import type { CoordLimits, StrongBackend } from '@parley/coord';
import { EtcdBackend, etcdStrong, freePort } from '@parley/etcd';
import { type Clock, Emitter, SeededRandom, systemClock, systemScheduler } from '@parley/interface';
import { createMemoryNetwork, silentLogger } from '@parley/net';
import { createNode, type NodeContext, type NodeOptions, type ParleyNode } from '@parley/node';
import { strongFaces } from '@parley/node/backend';
import { MemoryKVStorage, MemoryRaftLogStorage } from '@parley/storage';
import type { EtcdFixture } from './etcd-fixture.js';

/** What a test may set on the node it starts. */
export interface ConformanceNodeOptions {
  /** The node's clock (default: the system clock). */
  clock?: Clock;
  /** Coord limits of the strong side. */
  limits?: Partial<CoordLimits>;
}

export type BackendKind = 'raft' | 'etcd';

/** The strong side of a node: what the suite calls. */
export type StrongNode = Pick<ParleyNode, 'strong' | 'locks' | 'close'>;

/** A behaviour a backend does not have yet: its tests are skipped, saying why. */
export interface KnownGap {
  /** Matches test names. */
  pattern: RegExp;
  why: string;
}

export interface BackendUnderTest {
  readonly kind: BackendKind;
  /** Tests skipped on this backend, with the reason (empty once the backend does everything). */
  readonly gaps: readonly KnownGap[];
  /** A fresh node whose strong side is this backend, with no strong state; closed by `closeAll`. */
  node(options?: ConformanceNodeOptions): Promise<StrongNode>;
  /** `createNode` options of a node over this backend (for a server the test builds itself). */
  nodeOptions(options?: ConformanceNodeOptions): NodeOptions;
  /** A node whose backend cannot be reached (no quorum, or no etcd listening); closed by `closeAll`. */
  unreachableNode(): Promise<StrongNode>;
  /** `parley serve` arguments that select this backend (after `serve`). */
  serveArgs(): string[];
  /** Closes every node started since the last call. */
  closeAll(): Promise<void>;
}

export const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** Raft timing for tests: 10 ms ticks, a lone voter leads within ~200 ms. */
export const FAST_RAFT = { tickMs: 10, electionTimeoutTicks: 10, callTimeoutMs: 8_000, attemptTimeoutMs: 2_000 };

let seq = 0;

/** Common part: memory storage and an in-memory transport for the eventual side. */
function memoryNodeOptions(options: ConformanceNodeOptions): NodeOptions {
  const network = createMemoryNetwork();
  const transport = network.createTransport({ peerId: `conf-${process.pid}-${++seq}`, logger: silentLogger });
  return {
    transport,
    storage: { kv: new MemoryKVStorage(), raftLog: new MemoryRaftLogStorage() },
    logger: quietLogger,
    ...(options.clock ? { clock: options.clock } : {}),
  };
}

abstract class NodeTracker {
  private readonly open: StrongNode[] = [];

  abstract nodeOptions(options?: ConformanceNodeOptions): NodeOptions;

  protected start(options: ConformanceNodeOptions): Promise<StrongNode> {
    return createNode(this.nodeOptions(options));
  }

  async node(options: ConformanceNodeOptions = {}): Promise<StrongNode> {
    const n = await this.start(options);
    this.open.push(n);
    return n;
  }

  async unreachableNode(): Promise<StrongNode> {
    const n = await createNode(await this.unreachableOptions());
    this.open.push(n);
    return n;
  }

  protected abstract unreachableOptions(): Promise<NodeOptions>;

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.open.splice(0).map((n) => n.close()));
  }
}

class RaftBackend extends NodeTracker implements BackendUnderTest {
  readonly kind = 'raft' as const;
  readonly gaps: readonly KnownGap[] = [];

  nodeOptions(options: ConformanceNodeOptions = {}): NodeOptions {
    return {
      ...memoryNodeOptions(options),
      raft: { ...FAST_RAFT, ...(options.limits ? { limits: options.limits } : {}) },
    };
  }

  /** One voter of three running: no leader can be elected. */
  protected async unreachableOptions(): Promise<NodeOptions> {
    const o = memoryNodeOptions({});
    const self = (o.transport as { peerId: string }).peerId;
    return { ...o, raft: { ...FAST_RAFT, voters: [self, `${self}-gone-1`, `${self}-gone-2`] } };
  }

  serveArgs(): string[] {
    return [];
  }
}

/** The built-in backend: a Raft group of one per node, over memory storage. */
export function raftBackend(): BackendUnderTest {
  return new RaftBackend();
}

/** What the etcd backend does not do yet (each entry goes once its side lands; none today). */
const ETCD_GAPS: readonly KnownGap[] = [];

class EtcdBackendUnderTest extends NodeTracker implements BackendUnderTest {
  readonly kind = 'etcd' as const;
  readonly gaps = ETCD_GAPS;

  constructor(private readonly fixture: EtcdFixture) {
    super();
  }

  nodeOptions(options: ConformanceNodeOptions = {}): NodeOptions {
    return {
      ...memoryNodeOptions(options),
      strong: etcdStrong({
        endpoints: this.fixture.cluster().endpoints,
        prefix: this.fixture.freshPrefix(),
        callTimeoutMs: FAST_RAFT.callTimeoutMs,
        ...(options.limits ? { limits: options.limits } : {}),
      }),
    };
  }

  /** An endpoint where no etcd listens. */
  protected async unreachableOptions(): Promise<NodeOptions> {
    const port = await freePort();
    return {
      ...memoryNodeOptions({}),
      strong: etcdStrong({ endpoints: [`http://127.0.0.1:${port}`], prefix: this.fixture.freshPrefix() }),
    };
  }

  serveArgs(): string[] {
    return ['--etcd', this.fixture.cluster().endpoints.join(','), '--etcd-prefix', this.fixture.freshPrefix()];
  }
}

export interface EtcdStrongNodeOptions {
  endpoints: string[];
  prefix: string;
  clock?: Clock;
  limits?: Partial<CoordLimits>;
  /** Bound of one call, in ms (default 8,000). */
  callTimeoutMs?: number;
  /** Wraps the backend (a planted bug). */
  wrap?: (backend: StrongBackend) => StrongBackend;
}

/**
 * A node's strong faces (`strong(ns)`, `locks(ns)`: the same faces createNode
 * builds over any backend) over an EtcdBackend on `prefix`, optionally
 * wrapped (a planted bug). Nodes on the same prefix share their strong state.
 */
export function etcdStrongNode(o: EtcdStrongNodeOptions): StrongNode {
  const clock = o.clock ?? systemClock;
  const backend = new EtcdBackend({
    endpoints: o.endpoints,
    prefix: o.prefix,
    clock,
    random: new SeededRandom(++seq),
    callTimeoutMs: o.callTimeoutMs ?? FAST_RAFT.callTimeoutMs,
    ...(o.limits ? { limits: o.limits } : {}),
  });
  const ctx = {
    clock,
    scheduler: systemScheduler,
    logger: quietLogger,
    events: new Emitter(),
  } as unknown as NodeContext;
  const faces = strongFaces(ctx, o.wrap ? o.wrap(backend) : backend);
  return { strong: faces.strong, locks: faces.locks, close: () => backend.close() };
}

/** The etcd backend: each node on its own prefix of the file's loopback etcd cluster. */
export function etcdBackend(fixture: EtcdFixture): BackendUnderTest {
  return new EtcdBackendUnderTest(fixture);
}
