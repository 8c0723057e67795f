/**
 * The backends the conformance suite runs against. A `BackendUnderTest`
 * starts fresh Parley nodes whose strong side is that backend: the built-in
 * Raft group (a group of one over memory storage), or etcd (a unique key
 * prefix per node on a shared loopback cluster). The eventual side of every
 * node runs on an in-memory transport: the suite is about the strong side.
 */
import type { CoordLimits } from '@parley/coord';
import type { Clock } from '@parley/interface';
import { createMemoryNetwork, silentLogger } from '@parley/net';
import { createNode, type NodeOptions, type ParleyNode } from '@parley/node';
import { MemoryKVStorage, MemoryRaftLogStorage } from '@parley/storage';

/** What a test may set on the node it starts. */
export interface ConformanceNodeOptions {
  /** The node's clock (default: the system clock). */
  clock?: Clock;
  /** Coord limits of the strong side. */
  limits?: Partial<CoordLimits>;
}

export type BackendKind = 'raft' | 'etcd';

export interface BackendUnderTest {
  readonly kind: BackendKind;
  /** A fresh node whose strong side is this backend, with no strong state; closed by `closeAll`. */
  node(options?: ConformanceNodeOptions): Promise<ParleyNode>;
  /** `createNode` options of a node over this backend (for a server the test builds itself). */
  nodeOptions(options?: ConformanceNodeOptions): NodeOptions;
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
  private readonly open: ParleyNode[] = [];

  abstract nodeOptions(options?: ConformanceNodeOptions): NodeOptions;

  async node(options: ConformanceNodeOptions = {}): Promise<ParleyNode> {
    const n = await createNode(this.nodeOptions(options));
    this.open.push(n);
    return n;
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.open.splice(0).map((n) => n.close()));
  }
}

class RaftBackend extends NodeTracker implements BackendUnderTest {
  readonly kind = 'raft' as const;

  nodeOptions(options: ConformanceNodeOptions = {}): NodeOptions {
    return {
      ...memoryNodeOptions(options),
      raft: { ...FAST_RAFT, ...(options.limits ? { limits: options.limits } : {}) },
    };
  }

  serveArgs(): string[] {
    return [];
  }
}

/** The built-in backend: a Raft group of one per node, over memory storage. */
export function raftBackend(): BackendUnderTest {
  return new RaftBackend();
}
