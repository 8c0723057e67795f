/**
 * How one eventual namespace travels between nodes:
 *
 * - Gossip: one gossipsub topic per namespace (`parley/ev/1/<ns>`). Durable
 *   local deltas wait at most `gossipDelayMs` for company and leave together
 *   in one message of at most `maxGossipBytes`. Publishing with no peers is
 *   fine: anti-entropy repairs whatever gossip misses. Direct fan-out: while
 *   this node reaches every recent replica itself (and at most
 *   `directFanoutPeers` peers), the message goes to each connected peer as a
 *   one-way request-protocol message instead (TAG_GOSSIP), one copy each,
 *   which its receivers merge as gossip and do not forward.
 * - Anti-entropy: on every new connection, when the namespace opens, and every
 *   `antiEntropyMs` (±50%) with one peer, this node sends its digest (the dots
 *   it has seen) over a direct request (`parley/ev/1/<ns>`), and merges the
 *   reply: exactly the states holding dots it lacks, O(difference).
 * - Majority: a 'majority' write pushes its delta to the namespace's known
 *   replicas and waits until a majority (counting this node) have it on disk;
 *   a 'majority' read pulls from a majority and merges before reading. The
 *   majority is of the replicas heard from lately (KnownReplicas), or of the
 *   call's `replicas` when larger, and never of this node alone.
 * - Hostile input: an undecodable, foreign or over-limit delta is dropped with
 *   a typed error that is counted, logged and emitted (`reject:decode`); the
 *   rest of the message and the namespace keep working.
 */
import { type Delta, decodeDelta, decodeDigest, encodeDelta, encodeDigest, type KeyState } from '@parley/crdt';
import {
  type Cancel,
  DecodeError,
  InvalidArgumentError,
  isParleyError,
  type PeerId,
  TimeoutError,
  type Unsubscribe,
  ValueTooLargeError,
} from '@parley/interface';
import { maxWallOf } from './persist.js';
import type { ReplicationPort } from './port.js';
import { KnownReplicas } from './replicas.js';
import {
  decodeGossip,
  decodeRequest,
  encodeGossip,
  encodeRequest,
  TAG_GOSSIP,
  TAG_PULL,
  TAG_PUSH,
  TAG_RICH,
} from './wire.js';

/** Rejected inputs (decaying by half every PENALTY_HALF_LIFE_MS) after which a peer's gossip is ignored. */
export const MUTE_THRESHOLD = 20;
export const PENALTY_HALF_LIFE_MS = 60_000;
export const MUTE_MS = 60_000;
/** Peers tracked for penalties (the worst are kept when full). */
const MAX_PENALIZED = 1024;

const EMPTY = new Uint8Array(0);

function valueBytes(state: KeyState): number {
  if (state.type !== 'register') return 0;
  return Buffer.byteLength(JSON.stringify(state.value), 'utf8');
}

export class Replicator {
  readonly topic: string;
  readonly protocol: string;
  private offs: Unsubscribe[] = [];
  private outbox: Uint8Array[] = [];
  private outboxBytes = 0;
  private flushTimer: Cancel | undefined;
  private aeTimer: Cancel | undefined;
  private readonly aeInFlight = new Set<PeerId>();
  /** Per-peer penalty: a decaying count of rejected inputs, and a mute deadline once it passes the threshold. */
  private readonly penalties = new Map<PeerId, { score: number; atMs: number; mutedUntil: number }>();
  private started = false;
  private stopped = false;
  private readonly replicas: KnownReplicas;
  /** Majority operations waiting for more replicas to become known. */
  private readonly replicaListeners = new Set<(peer: PeerId) => void>();

  constructor(private readonly ns: ReplicationPort) {
    this.topic = `parley/ev/1/${ns.name}`;
    this.protocol = `parley/ev/1/${ns.name}`;
    this.replicas = new KnownReplicas(ns.ctx.peerId, ns.options.replicaTtlMs);
  }

  private get transport() {
    return this.ns.ctx.transport;
  }

  /** Adopts the replicas persisted in the namespace's meta (when the namespace opens). */
  loadReplicas(): void {
    this.replicas.load(this.ns.storedReplicas(), this.ns.now());
  }

  /** Peers known to replicate this namespace: heard from within `replicaTtlMs` (see KnownReplicas). */
  knownReplicas(): PeerId[] {
    return this.replicas.list(this.ns.now());
  }

  private noteReplica(peer: PeerId): void {
    const change = this.replicas.heard(peer, this.ns.now());
    if (change === undefined) return;
    this.ns.storeReplicas(this.replicas.toJSON());
    if (change === 'new') for (const l of [...this.replicaListeners]) l(peer);
  }

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    const t = this.transport;
    this.offs.push(t.subscribe(this.topic, (from, msg) => this.onGossip(from, msg)));
    t.handle(this.protocol, (from, req) => this.onRequest(from, req));
    this.offs.push(() => t.unhandle(this.protocol));
    this.offs.push(t.on('peer:connect', (peer) => void this.antiEntropyWith(peer)));
    for (const peer of t.peers()) void this.antiEntropyWith(peer);
    this.scheduleAntiEntropy();
  }

  /** Sends pending gossip and stops listening. */
  stop(): void {
    if (this.stopped) return;
    this.flush();
    this.stopped = true;
    this.aeTimer?.();
    this.flushTimer?.();
    for (const off of this.offs) off();
    this.offs = [];
  }

  // ---------------------------------------------------------------- gossip out

  /** Forgets unsent gossip (a new incarnation must not send the old one's writes). */
  dropOutbox(): void {
    this.outbox = [];
    this.outboxBytes = 0;
  }

  /** Queues a durable local delta for the next gossip message. */
  gossip(delta: Uint8Array): void {
    if (this.stopped) return;
    this.outbox.push(delta);
    this.outboxBytes += delta.length;
    if (this.outboxBytes >= this.ns.options.maxGossipBytes) this.flush();
    else this.flushTimer ??= this.ns.ctx.scheduler.after(this.ns.options.gossipDelayMs, () => this.flush());
  }

  private flush(): void {
    this.flushTimer?.();
    this.flushTimer = undefined;
    const max = this.ns.options.maxGossipBytes;
    while (this.outbox.length > 0) {
      const batch: Uint8Array[] = [];
      let bytes = 0;
      while (this.outbox.length > 0) {
        const next = this.outbox[0] as Uint8Array;
        if (batch.length > 0 && bytes + next.length > max) break;
        batch.push(next);
        bytes += next.length;
        this.outbox.shift();
      }
      this.outboxBytes -= bytes;
      const msg = encodeGossip(batch);
      this.ns.counters.gossipBytesOut += msg.length;
      this.ns.ctx.events.emit('gossip:bytes', { direction: 'out', bytes: msg.length, namespace: this.ns.name });
      const direct = this.directTargets();
      if (direct) {
        this.ns.counters.directGossip++;
        this.sendDirect(direct, msg);
      } else {
        this.transport.publish(this.topic, msg).catch((err: unknown) => {
          this.ns.ctx.logger.warn({ err: String(err), namespace: this.ns.name }, 'eventual: gossip publish failed');
        });
      }
    }
  }

  /** The peers to send gossip to directly, or undefined when gossipsub must carry it (see the header). */
  private directTargets(): PeerId[] | undefined {
    const max = this.ns.options.directFanoutPeers;
    if (max === 0) return undefined;
    const connected = this.transport.peers();
    if (connected.length > max) return undefined;
    const recent = this.ns.now() - 10 * this.ns.options.antiEntropyMs;
    if (this.replicas.anyUnconnectedSince(new Set(connected), recent)) {
      this.ns.counters.meshFallbacks++;
      return undefined;
    }
    return connected;
  }

  private sendDirect(peers: readonly PeerId[], msg: Uint8Array): void {
    const request = encodeRequest(TAG_GOSSIP, msg);
    for (const peer of peers) {
      // Best effort, as gossip: a lost copy is repaired by anti-entropy.
      this.transport.send(peer, this.protocol, request).catch((err: unknown) => {
        this.ns.ctx.logger.debug({ err: String(err), namespace: this.ns.name, peer }, 'eventual: direct gossip failed');
      });
    }
  }

  // ---------------------------------------------------------------- input checks

  /**
   * Scores a peer down for one refused input. Past MUTE_THRESHOLD (decaying with a
   * one-minute half-life) its gossip is ignored for MUTE_MS — the application-level
   * stand-in for a gossipsub peer score, which the transport contract does not expose.
   * Anti-entropy with it still runs, so the namespace keeps converging.
   */
  private penalize(peer: PeerId): void {
    const now = this.ns.now();
    let p = this.penalties.get(peer);
    if (!p) {
      if (this.penalties.size >= MAX_PENALIZED) {
        const [first] = this.penalties.keys();
        if (first !== undefined) this.penalties.delete(first);
      }
      p = { score: 0, atMs: now, mutedUntil: 0 };
      this.penalties.set(peer, p);
    }
    p.score = p.score * 0.5 ** (Math.max(0, now - p.atMs) / PENALTY_HALF_LIFE_MS) + 1;
    p.atMs = now;
    if (p.score >= MUTE_THRESHOLD && p.mutedUntil <= now) {
      p.mutedUntil = now + MUTE_MS;
      this.ns.ctx.logger.warn(
        { namespace: this.ns.name, peer, score: Math.round(p.score) },
        'eventual: ignoring gossip from a peer that keeps sending bad input',
      );
    }
  }

  /** Whether gossip from `peer` is ignored now. */
  muted(peer: PeerId): boolean {
    const p = this.penalties.get(peer);
    return p !== undefined && p.mutedUntil > this.ns.now();
  }

  /** Counts, logs and emits one refused piece of input. */
  reject(peer: PeerId, err: unknown): void {
    this.penalize(peer);
    const code = isParleyError(err) ? err.code : 'decode_error';
    if (code === 'value_too_large') this.ns.counters.overLimitRejections++;
    else this.ns.counters.decodeRejections++;
    this.ns.ctx.events.emit('reject:decode', { namespace: this.ns.name, peer, code });
    this.ns.ctx.logger.warn(
      { namespace: this.ns.name, peer, code, err: String((err as Error)?.message ?? err) },
      'eventual: dropped input from a peer',
    );
  }

  /** Decodes and checks a delta from a peer; throws a typed error when it must be dropped. */
  checkedDelta(bytes: Uint8Array): Delta {
    const delta = decodeDelta(bytes);
    if (delta.namespace !== this.ns.name) {
      throw new InvalidArgumentError(`delta of namespace '${delta.namespace}' sent to '${this.ns.name}'`);
    }
    const max = this.ns.options.maxValueBytes;
    if (bytes.length > max) {
      for (const s of delta.states) {
        const size = valueBytes(s);
        if (size > max) throw new ValueTooLargeError(size, max);
      }
    }
    return delta;
  }

  private onGossip(from: PeerId, msg: Uint8Array): void {
    if (this.stopped || from === this.ns.ctx.peerId) return;
    this.ns.counters.gossipBytesIn += msg.length;
    this.ns.ctx.events.emit('gossip:bytes', { direction: 'in', bytes: msg.length, namespace: this.ns.name });
    if (this.ns.closed) return;
    if (this.muted(from)) {
      this.ns.counters.mutedGossip++;
      return;
    }
    this.ns.checkIncarnation();
    let parts: Uint8Array[];
    try {
      if (msg.length > this.ns.options.maxGossipBytes + this.ns.options.maxValueBytes) {
        throw new ValueTooLargeError(msg.length, this.ns.options.maxGossipBytes + this.ns.options.maxValueBytes);
      }
      parts = decodeGossip(msg);
    } catch (err) {
      this.reject(from, err);
      return;
    }
    for (const part of parts) {
      try {
        const delta = this.checkedDelta(part);
        this.noteReplica(from);
        this.ns.mergeRemote(delta, part, from);
      } catch (err) {
        this.reject(from, err);
      }
    }
  }

  // ---------------------------------------------------------------- requests in

  private async onRequest(from: PeerId, bytes: Uint8Array): Promise<Uint8Array> {
    let req: { tag: number; body: Uint8Array };
    try {
      req = decodeRequest(bytes);
    } catch (err) {
      this.reject(from, err);
      throw err;
    }
    if (req.tag === TAG_GOSSIP) {
      this.onGossip(from, req.body);
      return EMPTY;
    }
    this.noteReplica(from);
    this.ns.checkIncarnation();
    if (req.tag === TAG_PULL) {
      let digest: ReturnType<typeof decodeDigest>;
      try {
        digest = decodeDigest(req.body);
        if (digest.namespace !== this.ns.name) throw new InvalidArgumentError('digest of another namespace');
      } catch (err) {
        this.reject(from, err);
        throw err;
      }
      // The replica holds only what is safe to hand out: local writes are applied once durable,
      // and merged remote deltas are durable at their origin (which wrote them before sending).
      // So a pull needs no fsync here, and a node whose disk faulted still serves anti-entropy.
      return encodeDelta(this.ns.deltaFor(digest));
    }
    if (req.tag === TAG_PUSH) {
      let delta: Delta;
      try {
        delta = this.checkedDelta(req.body);
      } catch (err) {
        this.reject(from, err);
        throw err;
      }
      this.ns.mergeRemote(delta, req.body, from);
      await this.ns.durable();
      return new Uint8Array(0);
    }
    if (req.tag === TAG_RICH) return this.ns.richRequest(from, req.body);
    throw new DecodeError(`unknown request tag ${req.tag}`);
  }

  // ---------------------------------------------------------------- anti-entropy

  private scheduleAntiEntropy(): void {
    if (this.stopped) return;
    const base = this.ns.options.antiEntropyMs;
    const delay = Math.floor(base / 2) + this.ns.ctx.random.int(base + 1);
    this.aeTimer = this.ns.ctx.scheduler.after(delay, () => {
      this.aeTimer = undefined;
      if (this.stopped) return;
      const connected = this.transport.peers();
      const known = new Set(this.knownReplicas());
      const replicas = connected.filter((p) => known.has(p));
      const pool = replicas.length > 0 ? replicas : connected;
      if (pool.length > 0) void this.antiEntropyWith(pool[this.ns.ctx.random.int(pool.length)] as PeerId);
      this.scheduleAntiEntropy();
    });
  }

  /** One pull round with `peer`: send our digest, merge what we lack. Never throws. */
  async antiEntropyWith(peer: PeerId): Promise<number> {
    if (this.stopped || this.aeInFlight.has(peer) || peer === this.ns.ctx.peerId) return 0;
    this.ns.checkIncarnation();
    this.aeInFlight.add(peer);
    try {
      const digest = encodeDigest(this.ns.digest());
      const reply = await this.transport.request(peer, this.protocol, encodeRequest(TAG_PULL, digest), {
        timeoutMs: this.ns.options.requestTimeoutMs,
      });
      if (this.stopped) return 0;
      const now = this.ns.now();
      let delta: Delta;
      try {
        delta = this.checkedDelta(reply);
      } catch (err) {
        this.reject(peer, err);
        return 0;
      }
      this.noteReplica(peer);
      let oldest = Number.POSITIVE_INFINITY;
      for (const s of delta.states) oldest = Math.min(oldest, maxWallOf(s));
      const repaired = this.ns.mergeRemote(delta, reply, peer);
      this.ns.counters.antiEntropyRounds++;
      this.ns.counters.repairedEntries += repaired;
      this.ns.noteContact(now);
      this.ns.ctx.events.emit('antientropy:round', {
        namespace: this.ns.name,
        peer,
        repairedEntries: repaired,
        bytes: digest.length + reply.length,
      });
      this.ns.ctx.events.emit('replication:lag', {
        namespace: this.ns.name,
        lagMs: repaired > 0 && oldest !== Number.POSITIVE_INFINITY ? Math.max(0, now - oldest) : 0,
      });
      return repaired;
    } catch (err) {
      // A peer without this namespace, unreachable or slow: the next round retries.
      this.ns.ctx.logger.debug(
        { err: String(err), peer, namespace: this.ns.name },
        'eventual: anti-entropy round failed',
      );
      return 0;
    } finally {
      this.aeInFlight.delete(peer);
    }
  }

  /**
   * One pull round with every replica known and every connected peer (a
   * session catching up, see session-wait.ts). Resolves once each answered or
   * failed; never throws.
   */
  async pullRound(): Promise<void> {
    const peers = new Set([...this.knownReplicas(), ...this.transport.peers()]);
    await Promise.all([...peers].map((p) => this.antiEntropyWith(p)));
  }

  // ---------------------------------------------------------------- majority

  /**
   * Acknowledgements needed from other replicas for a majority that counts
   * this node: of the known replicas and this node, or of `replicas` when
   * that is larger. Without `replicas`, at least one other replica: a
   * majority of a set this node does not know is not a majority.
   */
  majorityNeed(replicas: number | undefined): number {
    const group = Math.max(this.knownReplicas().length + 1, replicas ?? 0);
    return replicas === undefined ? Math.max(1, Math.floor(group / 2)) : Math.floor(group / 2);
  }

  /**
   * Runs `send` with known replicas until `need` of them succeed. Replicas
   * that become known meanwhile are tried too; the deadline fails it with
   * `timeout`, and so do failures that leave too few replicas to try.
   */
  private async fromMajority(
    what: string,
    replicas: number | undefined,
    timeoutMs: number | undefined,
    send: (peer: PeerId, timeoutMs: number) => Promise<void>,
  ): Promise<void> {
    const need = this.majorityNeed(replicas);
    if (need === 0) return;
    const timeout = timeoutMs ?? this.ns.options.requestTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      const tried = new Set<PeerId>();
      let ok = 0;
      let failed = 0;
      let settled = false;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        cancel();
        this.replicaListeners.delete(tryPeer);
        if (err) reject(err);
        else resolve();
      };
      const timedOut = () =>
        new TimeoutError(`${what}: ${ok} of ${need} replica acknowledgements within ${timeout} ms`, {
          namespace: this.ns.name,
          acks: ok,
          need,
          known: this.knownReplicas().length,
        });
      const cancel = this.ns.ctx.scheduler.after(timeout, () => finish(timedOut()));
      const tryPeer = (peer: PeerId) => {
        if (settled || tried.has(peer)) return;
        tried.add(peer);
        send(peer, timeout).then(
          () => {
            ok++;
            if (ok >= need) finish();
          },
          () => {
            failed++;
            // Every replica known has been tried: fail once those left cannot make the majority.
            const known = this.knownReplicas();
            if (known.every((p) => tried.has(p)) && known.length - failed < need) finish(timedOut());
          },
        );
      };
      this.replicaListeners.add(tryPeer);
      for (const peer of this.knownReplicas()) tryPeer(peer);
    });
  }

  /** Pushes a durable local delta to a majority of the known replicas (durable there too). */
  pushToMajority(delta: Uint8Array, replicas: number | undefined, timeoutMs: number | undefined): Promise<void> {
    const req = encodeRequest(TAG_PUSH, delta);
    return this.fromMajority('majority write', replicas, timeoutMs, async (peer, timeout) => {
      await this.transport.request(peer, this.protocol, req, { timeoutMs: timeout });
    });
  }

  /** Pulls and merges what a majority of the known replicas hold. */
  pullFromMajority(replicas: number | undefined, timeoutMs: number | undefined): Promise<void> {
    return this.fromMajority('majority read', replicas, timeoutMs, async (peer, timeout) => {
      const digest = encodeDigest(this.ns.digest());
      const reply = await this.transport.request(peer, this.protocol, encodeRequest(TAG_PULL, digest), {
        timeoutMs: timeout,
      });
      let delta: Delta;
      try {
        delta = this.checkedDelta(reply);
      } catch (err) {
        this.reject(peer, err);
        throw err;
      }
      this.ns.mergeRemote(delta, reply, peer);
    });
  }
}
