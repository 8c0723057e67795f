/**
 * A replica of one eventual namespace as a simulated process: the
 * NamespaceReplica of @parley/crdt, persisted to the host's KV store, spread
 * by gossip of deltas and repaired by periodic anti-entropy (digest → missing
 * delta) over the host's Transport. It is the eventual half of a Parley node,
 * small enough to run thousands of times per sweep.
 *
 * Durability rule: nothing leaves the process before it is on disk. A local
 * write is acknowledged and gossiped only once persisted; an anti-entropy
 * reply waits until every write applied before it was computed is persisted.
 * Otherwise a crash could lose a write some peer already holds, and the
 * restarted replica would reuse its dot.
 *
 * On disk: `['crdt', ns, 'snap']` (a full state) and
 * `['crdt', ns, 'log', <10-digit seq>]` (deltas since), each framed with a
 * FNV-1a checksum so that a torn tail record is recognized and skipped.
 */
import {
  type Delta,
  decodeDelta,
  decodeDigest,
  decodeState,
  encodeDelta,
  encodeDigest,
  encodeState,
  NamespaceReplica,
} from '@parley/crdt';
import { isParleyError, type KVStorage, type PeerId } from '@parley/interface';
import type { HostContext } from '@parley/sim';

export interface CrdtReplicaOptions {
  namespace: string;
  /** Mean anti-entropy period; each round is jittered ±50%. */
  antiEntropyMs: number;
  /** Log records kept before they are folded into a snapshot. */
  maxLogRecords: number;
  maxClockDriftMs: number;
  /** TTL bounds and the tombstone grace period (short ones make GC run within a scenario). */
  ttl?: { defaultTtlSeconds: number; maxTtlSeconds: number; tombstoneGraceMs: number };
  /** Runs `gc(now)` this often (mean, jittered ±50%); off when absent. */
  gcEveryMs?: number;
  /** Called after every merge of a peer's delta (gossip or anti-entropy reply): for the scenario's observers. */
  onMerge?: (node: CrdtReplicaNode) => void;
}

export interface CrdtReplicaCounters {
  gossipSent: number;
  gossipReceived: number;
  antiEntropyRounds: number;
  tornRecords: number;
  decodeErrors: number;
  driftRejections: number;
  readRetries: number;
  gcRuns: number;
  /** Tombstones and expired entries collected by `gc`. */
  gcRemovals: number;
}

const ENC = new TextEncoder();

function fnv1a(bytes: Uint8Array, end: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < end; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Record framing: payload followed by a 4-byte FNV-1a of the payload. */
export function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 4);
  out.set(payload);
  new DataView(out.buffer).setUint32(payload.length, fnv1a(payload, payload.length));
  return out;
}

/** The payload of a framed record, or undefined when it is torn or corrupt. */
export function unframe(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length < 4) return undefined;
  const end = bytes.length - 4;
  const sum = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(end);
  return sum === fnv1a(bytes, end) ? bytes.subarray(0, end) : undefined;
}

const pad = (n: number) => n.toString().padStart(10, '0');

export class CrdtReplicaNode {
  readonly replica: NamespaceReplica;
  readonly counters: CrdtReplicaCounters = {
    gossipSent: 0,
    gossipReceived: 0,
    antiEntropyRounds: 0,
    tornRecords: 0,
    decodeErrors: 0,
    driftRejections: 0,
    readRetries: 0,
    gcRuns: 0,
    gcRemovals: 0,
  };
  private readonly store: KVStorage;
  private nextRecord = 0;
  private logRecords: string[][] = [];
  /** Resolves when every write issued so far is durable. */
  private persisted: Promise<void> = Promise.resolve();
  private readonly topic: string;
  private readonly aeProtocol: string;

  private constructor(
    private readonly ctx: HostContext,
    private readonly options: CrdtReplicaOptions,
  ) {
    this.replica = new NamespaceReplica({
      namespace: options.namespace,
      replicaId: ctx.id,
      maxClockDriftMs: options.maxClockDriftMs,
      ...options.ttl,
    });
    this.store = ctx.kv('crdt');
    this.topic = `parley/crdt/${options.namespace}`;
    this.aeProtocol = `parley/crdt-ae/${options.namespace}`;
  }

  /** Boots a replica: restores it from disk, then joins gossip and anti-entropy. */
  static async boot(ctx: HostContext, options: CrdtReplicaOptions): Promise<CrdtReplicaNode> {
    const node = new CrdtReplicaNode(ctx, options);
    await node.restore();
    node.serve();
    await ctx.transport.start();
    node.scheduleAntiEntropy();
    node.scheduleGc();
    return node;
  }

  nowMs(): number {
    return this.ctx.clock.nowMs();
  }

  /** Applies a local operation; resolves once it is durable (acknowledged), then gossips it. */
  async write(op: (replica: NamespaceReplica, nowMs: number) => Delta): Promise<Delta> {
    const delta = op(this.replica, this.nowMs());
    await this.persist(delta);
    this.counters.gossipSent++;
    void this.ctx.transport.publish(this.topic, encodeDelta(delta)).catch(() => {});
    return delta;
  }

  private async restore(): Promise<void> {
    const prefix = ['crdt', this.options.namespace];
    const snap = await this.retry(() => this.store.load([...prefix, 'snap']));
    if (snap) {
      const payload = unframe(snap);
      // A snapshot is written in an atomic batch, so it is never torn.
      if (!payload) throw new Error('snapshot record failed its checksum');
      this.replica.merge(decodeState(payload), this.nowMs());
    }
    const records = await this.retry(() => this.store.loadRange([...prefix, 'log']));
    for (const rec of records) {
      const seq = Number(rec.key[rec.key.length - 1]);
      this.nextRecord = Math.max(this.nextRecord, seq + 1);
      this.logRecords.push(rec.key);
      const payload = unframe(rec.data);
      if (!payload) {
        this.counters.tornRecords++; // the unacknowledged tail of a crash
        continue;
      }
      this.replica.merge(decodeDelta(payload), this.nowMs());
    }
  }

  /** Retries a read that failed with a transient disk error, after a simulated pause. */
  private async retry<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (!isParleyError(err, 'unavailable') || attempt >= 100) throw err;
        this.counters.readRetries++;
        await new Promise<void>((resolve) => this.ctx.scheduler.after(5, resolve));
      }
    }
  }

  private serve(): void {
    const { transport } = this.ctx;
    transport.subscribe(this.topic, (_from, bytes) => {
      this.counters.gossipReceived++;
      let delta: Delta;
      try {
        delta = decodeDelta(bytes);
      } catch (err) {
        if (!isParleyError(err, 'decode_error')) throw err;
        this.counters.decodeErrors++;
        return;
      }
      this.mergeRemote(delta);
    });
    transport.handle(this.aeProtocol, async (_from, bytes) => {
      const reply = encodeDelta(this.replica.deltaFor(decodeDigest(bytes)));
      await this.persisted; // never hand out what is not on disk yet
      return reply;
    });
    transport.on('peer:connect', (peer) => this.antiEntropyWith(peer));
  }

  private mergeRemote(delta: Delta): void {
    const result = this.replica.merge(delta, this.nowMs());
    this.counters.driftRejections += result.rejectedStates;
    if (result.changedKeys.length > 0) void this.persist(delta);
    this.options.onMerge?.(this);
  }

  private scheduleAntiEntropy(): void {
    const base = this.options.antiEntropyMs;
    this.ctx.scheduler.after(Math.floor(base / 2) + this.ctx.random.int(base + 1), () => {
      const peers = this.ctx.transport.peers();
      if (peers.length > 0) this.antiEntropyWith(peers[this.ctx.random.int(peers.length)]!);
      this.scheduleAntiEntropy();
    });
  }

  private scheduleGc(): void {
    const every = this.options.gcEveryMs;
    if (every === undefined) return;
    this.ctx.scheduler.after(Math.floor(every / 2) + this.ctx.random.int(every + 1), () => {
      this.counters.gcRuns++;
      this.counters.gcRemovals += this.replica.gc(this.nowMs()).removed;
      this.scheduleGc();
    });
  }

  private antiEntropyWith(peer: PeerId): void {
    this.counters.antiEntropyRounds++;
    this.ctx.transport.request(peer, this.aeProtocol, encodeDigest(this.replica.digest()), { timeoutMs: 1_000 }).then(
      (bytes) => this.mergeRemote(decodeDelta(bytes)),
      () => {}, // timeouts and unreachable peers: the next round retries
    );
  }

  /** Appends a delta to the log (folding the log into a snapshot when it is long). */
  private persist(delta: Delta): Promise<void> {
    const prefix = ['crdt', this.options.namespace];
    let write: Promise<void>;
    if (this.logRecords.length >= this.options.maxLogRecords) {
      const ops = [
        { type: 'put' as const, key: [...prefix, 'snap'], data: frame(encodeState(this.replica.state())) },
        ...this.logRecords.map((key) => ({ type: 'del' as const, key })),
      ];
      this.logRecords = [];
      write = this.store.batch(ops);
    } else {
      const key = [...prefix, 'log', pad(this.nextRecord++)];
      this.logRecords.push(key);
      write = this.store.save(key, frame(encodeDelta(delta)));
    }
    this.persisted = Promise.all([this.persisted, write]).then(() => {});
    return write;
  }
}

export const encodeText = (s: string): Uint8Array => ENC.encode(s);
