/**
 * The in-memory Transport: every transport created from one MemoryNetwork
 * reaches the others in the same process, with the libp2p transport's
 * semantics (limits, timeouts, typed errors, events) and none of its cost.
 *
 * Delivery is asynchronous (a macrotask per hop, never a microtask), so code
 * that only works with instant delivery fails here as it would on a network.
 * Payloads are copied at each hop, and errors cross it as code + message +
 * details, exactly as they cross the wire.
 */
import {
  ClosedError,
  DEFAULT_TRANSPORT_LIMITS,
  Emitter,
  type GossipHandler,
  InvalidArgumentError,
  isParleyError,
  ParleyError,
  type PeerId,
  type RequestHandler,
  type RequestOptions,
  type Transport,
  type TransportEvents,
  type TransportLimits,
  UnavailableError,
  type Unsubscribe,
  ValueTooLargeError,
} from '@parley/interface';
import { describeError, type NetLogger, stderrLogger } from './logger.js';
import { PendingRequests } from './pending.js';

export interface MemoryTransportOptions {
  /** Defaults to `mem-<n>`, unique in the network. */
  peerId?: PeerId;
  /** Transports only connect to others with the same cluster key (the PSK's stand-in). Default `'default'`. */
  cluster?: string;
  limits?: Partial<TransportLimits>;
  logger?: NetLogger;
}

const defer: (fn: () => void) => void =
  typeof setImmediate === 'function' ? (fn) => void setImmediate(fn) : (fn) => void setTimeout(fn, 0);

function copy(bytes: Uint8Array): Uint8Array {
  return bytes.slice();
}

function linkKey(a: PeerId, b: PeerId): string {
  return a < b ? `${a}\n${b}` : `${b}\n${a}`;
}

/**
 * A set of in-memory transports. Started transports of the same cluster are
 * connected to each other, except across links cut with `disconnect` or
 * `partition`.
 *
 * @example
 * ```ts
 * const network = createMemoryNetwork();
 * const a = network.createTransport();
 * const b = network.createTransport();
 * await a.start(); await b.start();
 * b.handle('echo', (_from, bytes) => bytes);
 * await a.request(b.peerId, 'echo', new Uint8Array([1]));
 * ```
 */
export class MemoryNetwork {
  private readonly members = new Map<PeerId, MemoryTransport>();
  private readonly cut = new Set<string>();
  private counter = 0;

  createTransport(options: MemoryTransportOptions = {}): MemoryTransport {
    const peerId = options.peerId ?? `mem-${++this.counter}`;
    const existing = this.members.get(peerId);
    // A stopped transport's id is free again: a restarted process keeps its identity.
    if (existing && !existing.isStopped) {
      throw new InvalidArgumentError(`peer id '${peerId}' is taken in this network`);
    }
    const transport = new MemoryTransport(this, peerId, options);
    this.members.set(peerId, transport);
    return transport;
  }

  /** Cuts the link between two peers (both see `peer:disconnect`). */
  disconnect(a: PeerId, b: PeerId): void {
    this.cut.add(linkKey(a, b));
    this.members.get(a)?.linkDown(b);
    this.members.get(b)?.linkDown(a);
  }

  /** Restores a cut link. */
  reconnect(a: PeerId, b: PeerId): void {
    this.cut.delete(linkKey(a, b));
    this.link(a, b);
  }

  /** Cuts every link between the groups. */
  partition(...groups: PeerId[][]): void {
    for (let i = 0; i < groups.length; i++) {
      for (let j = i + 1; j < groups.length; j++) {
        for (const a of groups[i] ?? []) for (const b of groups[j] ?? []) this.disconnect(a, b);
      }
    }
  }

  /** Restores every cut link. */
  heal(): void {
    const links = [...this.cut];
    this.cut.clear();
    for (const key of links) {
      const [a, b] = key.split('\n') as [PeerId, PeerId];
      this.link(a, b);
    }
  }

  /** @internal */
  member(peer: PeerId): MemoryTransport | undefined {
    return this.members.get(peer);
  }

  /** @internal */
  connected(a: PeerId, b: PeerId): boolean {
    if (a === b || this.cut.has(linkKey(a, b))) return false;
    const x = this.members.get(a);
    const y = this.members.get(b);
    return !!x && !!y && x.running && y.running && x.cluster === y.cluster;
  }

  /** @internal */
  joined(peer: PeerId): void {
    for (const other of this.members.keys()) this.link(peer, other);
  }

  /** @internal */
  left(peer: PeerId): void {
    const leaving = this.members.get(peer);
    for (const [id, other] of this.members) {
      other.linkDown(peer);
      leaving?.linkDown(id);
    }
  }

  private link(a: PeerId, b: PeerId): void {
    if (!this.connected(a, b)) return;
    this.members.get(a)?.linkUp(b);
    this.members.get(b)?.linkUp(a);
  }
}

export function createMemoryNetwork(): MemoryNetwork {
  return new MemoryNetwork();
}

/** A transport on a fresh private network; mostly useful with `network.createTransport` instead. */
export function createMemoryTransport(network: MemoryNetwork, options: MemoryTransportOptions = {}): MemoryTransport {
  return network.createTransport(options);
}

export class MemoryTransport implements Transport {
  readonly limits: TransportLimits;
  readonly cluster: string;
  running = false;
  private stopped = false;

  /** True once `stop()` ran: its peer id may be reused by a new transport. */
  get isStopped(): boolean {
    return this.stopped;
  }
  private readonly events: Emitter<TransportEvents>;
  private readonly log: NetLogger;
  private readonly handlers = new Map<string, RequestHandler>();
  private readonly gossipHandlers = new Map<string, Set<GossipHandler>>();
  private readonly linked = new Set<PeerId>();
  private readonly requests: PendingRequests;
  private nextId = 1;

  constructor(
    private readonly network: MemoryNetwork,
    readonly peerId: PeerId,
    options: MemoryTransportOptions,
  ) {
    this.limits = { ...DEFAULT_TRANSPORT_LIMITS, ...options.limits };
    this.requests = new PendingRequests(this.limits.maxInFlightPerPeer);
    this.cluster = options.cluster ?? 'default';
    this.log = options.logger ?? stderrLogger;
    this.events = new Emitter((err) => this.log.warn('event listener threw', { error: describeError(err) }));
  }

  on<K extends keyof TransportEvents>(type: K, listener: (payload: TransportEvents[K]) => void): Unsubscribe {
    return this.events.on(type, listener);
  }

  async start(): Promise<void> {
    if (this.running || this.stopped) throw new InvalidArgumentError('transport cannot start twice');
    this.running = true;
    this.network.joined(this.peerId);
  }

  async stop(): Promise<void> {
    if (!this.running) {
      this.stopped = true;
      return;
    }
    this.running = false;
    this.stopped = true;
    this.requests.failAll(new ClosedError('transport'));
    this.network.left(this.peerId);
  }

  handle(protocol: string, handler: RequestHandler): void {
    if (protocol.length === 0) throw new InvalidArgumentError('protocol name must not be empty');
    this.handlers.set(protocol, handler);
  }

  unhandle(protocol: string): void {
    this.handlers.delete(protocol);
  }

  peers(): PeerId[] {
    return [...this.linked];
  }

  request(peer: PeerId, protocol: string, payload: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    if (!this.running) return Promise.reject(new ClosedError('transport'));
    if (payload.length > this.limits.maxMessageBytes) {
      return Promise.reject(new ValueTooLargeError(payload.length, this.limits.maxMessageBytes));
    }
    const full = this.requests.windowFull(peer);
    if (full) return Promise.reject(full);
    if (!this.linked.has(peer)) {
      return Promise.reject(new UnavailableError(`cannot reach ${peer}`, { peer }));
    }
    const timeoutMs = options.timeoutMs ?? this.limits.defaultTimeoutMs;
    const id = this.nextId++;
    const bytes = copy(payload);
    const response = this.requests.open(id, peer, protocol, timeoutMs);
    defer(() => {
      const target = this.network.member(peer);
      if (!target || !this.network.connected(this.peerId, peer)) {
        this.requests.fail(id, new UnavailableError(`cannot reach ${peer}`, { peer }));
        return;
      }
      target.serve(this.peerId, protocol, bytes).then((outcome) => {
        defer(() => {
          // The reply crosses the link back only while it is up.
          if (!this.network.connected(this.peerId, peer)) {
            this.requests.fail(id, new UnavailableError(`peer ${peer} disconnected`, { peer }));
          } else if (outcome.ok) {
            this.requests.resolve(id, outcome.payload);
          } else {
            this.requests.fail(id, new ParleyError(outcome.code, outcome.message, outcome.details));
          }
        });
      });
    });
    return response;
  }

  send(peer: PeerId, protocol: string, payload: Uint8Array): Promise<void> {
    if (!this.running) return Promise.reject(new ClosedError('transport'));
    if (protocol.length === 0) return Promise.reject(new InvalidArgumentError('protocol name must not be empty'));
    if (payload.length > this.limits.maxMessageBytes) {
      return Promise.reject(new ValueTooLargeError(payload.length, this.limits.maxMessageBytes));
    }
    if (!this.linked.has(peer)) return Promise.reject(new UnavailableError(`cannot reach ${peer}`, { peer }));
    const bytes = copy(payload);
    defer(() => {
      if (!this.network.connected(this.peerId, peer)) return; // lost with the link
      this.network.member(peer)?.receiveMessage(this.peerId, protocol, bytes);
    });
    return Promise.resolve();
  }

  subscribe(topic: string, handler: GossipHandler): Unsubscribe {
    let set = this.gossipHandlers.get(topic);
    if (!set) {
      set = new Set();
      this.gossipHandlers.set(topic, set);
    }
    set.add(handler);
    return () => {
      const current = this.gossipHandlers.get(topic);
      if (current?.delete(handler) && current.size === 0) this.gossipHandlers.delete(topic);
    };
  }

  async publish(topic: string, payload: Uint8Array): Promise<void> {
    if (!this.running) throw new ClosedError('transport');
    if (payload.length > this.limits.maxMessageBytes) {
      throw new ValueTooLargeError(payload.length, this.limits.maxMessageBytes);
    }
    for (const peer of this.linked) {
      const bytes = copy(payload);
      defer(() => {
        if (!this.network.connected(this.peerId, peer)) return;
        this.network.member(peer)?.deliverGossip(this.peerId, topic, bytes);
      });
    }
  }

  /** @internal */
  linkUp(peer: PeerId): void {
    if (!this.running || this.linked.has(peer)) return;
    this.linked.add(peer);
    this.events.emit('peer:connect', peer);
  }

  /** @internal */
  linkDown(peer: PeerId): void {
    if (!this.linked.delete(peer)) return;
    this.requests.failPeer(peer, new UnavailableError(`peer ${peer} disconnected`, { peer }));
    this.events.emit('peer:disconnect', peer);
  }

  /** @internal Runs the local handler for a request that arrived from `from`. */
  async serve(
    from: PeerId,
    protocol: string,
    payload: Uint8Array,
  ): Promise<
    | { ok: true; payload: Uint8Array }
    | { ok: false; code: ParleyError['code']; message: string; details: Record<string, unknown> }
  > {
    const handler = this.running ? this.handlers.get(protocol) : undefined;
    if (!handler) {
      return {
        ok: false,
        code: 'unavailable',
        message: `no handler for protocol '${protocol}'`,
        details: { protocol },
      };
    }
    try {
      const response = await handler(from, payload);
      if (response.length > this.limits.maxMessageBytes) {
        const err = new ValueTooLargeError(response.length, this.limits.maxMessageBytes);
        return { ok: false, code: err.code, message: err.message, details: { ...err.details } };
      }
      return { ok: true, payload: copy(response) };
    } catch (err) {
      if (isParleyError(err)) {
        return { ok: false, code: err.code, message: err.message, details: roundTripDetails(err.details) };
      }
      this.log.warn('request handler threw a non-Parley error', { protocol, error: describeError(err) });
      return { ok: false, code: 'unavailable', message: `handler for '${protocol}' failed`, details: {} };
    }
  }

  /** @internal A one-way message arrived from `from`: the handler's answer, or failure, goes nowhere. */
  receiveMessage(from: PeerId, protocol: string, payload: Uint8Array): void {
    const handler = this.running ? this.handlers.get(protocol) : undefined;
    if (!handler) return;
    const failed = (err: unknown) =>
      this.log.debug('one-way message handler failed', { protocol, error: describeError(err) });
    try {
      const result = handler(from, payload);
      if (result instanceof Promise) result.catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  /** @internal */
  deliverGossip(from: PeerId, topic: string, payload: Uint8Array): void {
    if (!this.running) return;
    const handlers = this.gossipHandlers.get(topic);
    if (!handlers) return;
    for (const handler of [...handlers]) {
      try {
        handler(from, payload);
      } catch (err) {
        this.log.warn('gossip handler threw', { topic, error: describeError(err) });
      }
    }
  }
}

/** Details cross the wire as JSON; do the same here so both transports hand back equal values. */
function roundTripDetails(details: Readonly<Record<string, unknown>>): Record<string, unknown> {
  try {
    return JSON.parse(JSON.stringify(details)) as Record<string, unknown>;
  } catch {
    return {};
  }
}
