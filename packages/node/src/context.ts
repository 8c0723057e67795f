/**
 * What a node module (eventual, strong) receives from `createNode`: every
 * outside thing enters through these seams, so the same module runs over
 * libp2p + LevelDB + the real clock, and over the simulator's world.
 */
import type {
  Clock,
  Emitter,
  KVStorage,
  PeerId,
  RaftLogStorage,
  Random,
  Scheduler,
  Transport,
} from '@parley/interface';

/** The subset of pino's logger the node uses; a pino logger satisfies it. */
export interface NodeLogger {
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}

/**
 * Observability hooks (the HTTP server exports them as Prometheus series).
 * Each module emits its own events; names are stable.
 */
export interface NodeEvents extends Record<string, unknown> {
  // eventual side
  'gossip:bytes': { direction: 'in' | 'out'; bytes: number; namespace: string };
  'delta:applied': { namespace: string; keys: number; origin: PeerId };
  'antientropy:round': { namespace: string; peer: PeerId; repairedEntries: number; bytes: number };
  'replication:lag': { namespace: string; lagMs: number };
  'reject:drift': { namespace: string; count: number; peer: PeerId };
  'reject:decode': { namespace: string; peer: PeerId; code: string };
  'storage:fsync': { ms: number; ops: number };
  /** A store of the node's own disk faulted: it refuses writes until the node restarts. */
  'storage:fault': { store: 'kv' | 'raft'; code: string };
  // strong side
  'raft:term': { term: number; leader: PeerId | null };
  'raft:commit': { ms: number };
  'raft:apply-lag': { entries: number };
  'lock:wait': { namespace: string; key: string; ms: number; granted: boolean };
}

/** Durable stores a node needs; `createNode` opens LevelDB ones under dataDir unless injected. */
export interface NodeStorage {
  /** Replicated state of eventual namespaces and node metadata (keys prefixed by module). */
  kv: KVStorage;
  /** The Raft log, hard state and snapshots of the strong side. */
  raftLog: RaftLogStorage;
}

export interface NodeContext {
  readonly peerId: PeerId;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly random: Random;
  readonly logger: NodeLogger;
  readonly storage: NodeStorage;
  readonly events: Emitter<NodeEvents>;
  /** Null when storage is injected (simulator, tests). */
  readonly dataDir: string | null;
}
