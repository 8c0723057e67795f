/**
 * `SimTransport`: the `Transport` contract of @parley/interface over the
 * simulated network. One instance per host generation; a crash kills it
 * (its pending requests never settle, as in a dead process).
 */
import {
  ClosedError,
  DEFAULT_TRANSPORT_LIMITS,
  Emitter,
  ERROR_STATUS,
  type ErrorCode,
  type GossipHandler,
  ParleyError,
  type PeerId,
  type RequestHandler,
  type RequestOptions,
  TimeoutError,
  type Transport,
  type TransportEvents,
  type TransportLimits,
  UnavailableError,
  type Unsubscribe,
  ValueTooLargeError,
} from '@parley/interface';
import type { SimNetwork } from './network.js';

/** What a transport needs from its host. */
export interface TransportHost {
  readonly id: PeerId;
  /** Runs `fn` after `delayMs` on the host's clock, as the host (nothing if it crashed). */
  after(delayMs: number, fn: () => void): () => void;
  /** Reports an exception thrown by a handler that must not throw. */
  crashed(err: unknown): void;
}

interface PendingRequest {
  peer: PeerId;
  resolve: (data: Uint8Array) => void;
  reject: (err: unknown) => void;
  cancelTimer: () => void;
}

type Reply =
  | { type: 'ok'; data: Uint8Array }
  | { type: 'error'; code: ErrorCode; message: string; details?: Record<string, unknown> };

/** Longest JSON rendering of an error's details carried back (as the libp2p frame's bound). */
const MAX_ERROR_DETAILS_BYTES = 4096;

/** An error's details as they cross a real wire: a JSON copy, or none if too large or not JSON. */
function wireDetails(details: Readonly<Record<string, unknown>>): Record<string, unknown> {
  try {
    const text = JSON.stringify(details);
    return text !== undefined && text.length <= MAX_ERROR_DETAILS_BYTES ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}

function remoteError(code: ErrorCode, message: string, details: Record<string, unknown> = {}): ParleyError {
  return new ParleyError(code, message, { ...details, remote: true });
}

export class SimTransport implements Transport {
  readonly peerId: PeerId;
  private readonly events = new Emitter<TransportEvents>();
  private readonly handlers = new Map<string, RequestHandler>();
  private readonly topics = new Map<string, Set<GossipHandler>>();
  private readonly pending = new Map<number, PendingRequest>();
  private readonly inFlight = new Map<PeerId, number>();
  private nextRequestId = 1;
  private state: 'new' | 'started' | 'stopped' | 'dead' = 'new';
  readonly limits: TransportLimits;

  constructor(
    private readonly host: TransportHost,
    private readonly network: SimNetwork,
    /** Resolves the live, started transport of a peer (its current generation), if any. */
    private readonly lookup: (peer: PeerId) => SimTransport | undefined,
    limits: Partial<TransportLimits> = {},
  ) {
    this.peerId = host.id;
    this.limits = { ...DEFAULT_TRANSPORT_LIMITS, ...limits };
  }

  get started(): boolean {
    return this.state === 'started';
  }

  on<K extends keyof TransportEvents>(type: K, listener: (payload: TransportEvents[K]) => void): Unsubscribe {
    return this.events.on(type, listener);
  }

  async start(): Promise<void> {
    if (this.state === 'dead') return new Promise(() => {});
    if (this.state === 'stopped') throw new ClosedError('transport');
    if (this.state === 'started') return;
    this.state = 'started';
    this.network.refresh();
  }

  async stop(): Promise<void> {
    if (this.state !== 'started') {
      if (this.state === 'new') this.state = 'stopped';
      return;
    }
    this.state = 'stopped';
    for (const [id, p] of [...this.pending]) {
      this.pending.delete(id);
      p.cancelTimer();
      p.reject(new ClosedError('transport'));
    }
    this.inFlight.clear();
    this.network.refresh();
  }

  handle(protocol: string, handler: RequestHandler): void {
    this.handlers.set(protocol, handler);
  }

  unhandle(protocol: string): void {
    this.handlers.delete(protocol);
  }

  peers(): PeerId[] {
    if (this.state !== 'started') return [];
    return this.network.peersOf(this.peerId);
  }

  /**
   * What `request` and `send` answer at once, before anything is sent: a dead
   * transport never answers, a stopped one is closed, an oversized payload or
   * an unreachable peer is refused.
   */
  private refusal(peer: PeerId, payload: Uint8Array): Promise<never> | undefined {
    if (this.state === 'dead') return new Promise(() => {});
    if (this.state !== 'started') return Promise.reject(new ClosedError('transport'));
    if (payload.length > this.limits.maxMessageBytes) {
      return Promise.reject(new ValueTooLargeError(payload.length, this.limits.maxMessageBytes));
    }
    if (peer === this.peerId || !this.network.isConnected(this.peerId, peer)) {
      return Promise.reject(new UnavailableError(`peer ${peer} is not reachable`, { peer }));
    }
    return undefined;
  }

  request(peer: PeerId, protocol: string, payload: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    const refused = this.refusal(peer, payload);
    if (refused) return refused;
    const inFlight = this.inFlight.get(peer) ?? 0;
    if (inFlight >= this.limits.maxInFlightPerPeer) {
      return Promise.reject(new UnavailableError(`${inFlight} requests already in flight to ${peer}`, { peer }));
    }
    const id = this.nextRequestId++;
    const timeoutMs = options.timeoutMs ?? this.limits.defaultTimeoutMs;
    const body = payload.slice();
    return new Promise<Uint8Array>((resolve, reject) => {
      const cancelTimer = this.host.after(timeoutMs, () => {
        if (this.settle(id)) reject(new TimeoutError(`request ${protocol} to ${peer} timed out after ${timeoutMs} ms`));
      });
      this.pending.set(id, { peer, resolve, reject, cancelTimer });
      this.inFlight.set(peer, inFlight + 1);
      this.network.send(this.peerId, peer, `req:${protocol}`, () => {
        this.lookup(peer)?.serve(this.peerId, protocol, body, (reply) => {
          this.network.send(peer, this.peerId, `res:${protocol}`, () => this.receiveReply(id, reply));
        });
      });
    });
  }

  send(peer: PeerId, protocol: string, payload: Uint8Array): Promise<void> {
    const refused = this.refusal(peer, payload);
    if (refused) return refused;
    const body = payload.slice();
    this.network.send(this.peerId, peer, `msg:${protocol}`, () =>
      this.lookup(peer)?.receive(this.peerId, protocol, body),
    );
    return Promise.resolve();
  }

  subscribe(topic: string, handler: GossipHandler): Unsubscribe {
    let set = this.topics.get(topic);
    if (!set) {
      set = new Set();
      this.topics.set(topic, set);
    }
    set.add(handler);
    return () => {
      set.delete(handler);
      if (set.size === 0) this.topics.delete(topic);
    };
  }

  async publish(topic: string, payload: Uint8Array): Promise<void> {
    if (this.state === 'dead') return new Promise(() => {});
    if (this.state !== 'started') throw new ClosedError('transport');
    if (payload.length > this.limits.maxMessageBytes) {
      throw new ValueTooLargeError(payload.length, this.limits.maxMessageBytes);
    }
    const body = payload.slice();
    for (const peer of this.network.peersOf(this.peerId)) {
      this.network.send(this.peerId, peer, `pub:${topic}`, () =>
        this.lookup(peer)?.receiveGossip(this.peerId, topic, body),
      );
    }
  }

  /** @internal The host crashed: this transport goes silent for good. */
  kill(): void {
    this.state = 'dead';
    for (const p of this.pending.values()) p.cancelTimer();
    this.pending.clear();
    this.inFlight.clear();
    this.handlers.clear();
    this.topics.clear();
  }

  /** @internal Called (as this host) when a connection to `peer` comes up or goes down. */
  connectionChanged(peer: PeerId, up: boolean): void {
    if (this.state !== 'started') return;
    if (!up) {
      for (const [id, p] of [...this.pending]) {
        if (p.peer !== peer) continue;
        this.settle(id);
        p.reject(new UnavailableError(`connection to ${peer} closed mid-request`, { peer }));
      }
    }
    this.events.emit(up ? 'peer:connect' : 'peer:disconnect', peer);
  }

  /** @internal A request arrived (runs as this host). */
  serve(from: PeerId, protocol: string, payload: Uint8Array, reply: (r: Reply) => void): void {
    if (this.state !== 'started') return;
    const handler = this.handlers.get(protocol);
    if (!handler) {
      reply({ type: 'error', code: 'unavailable', message: `no handler for protocol ${protocol}` });
      return;
    }
    let result: Promise<Uint8Array>;
    try {
      result = Promise.resolve(handler(from, payload));
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then(
      (data) => {
        if (this.state !== 'started') return;
        if (data.length > this.limits.maxMessageBytes) {
          const err = new ValueTooLargeError(data.length, this.limits.maxMessageBytes);
          reply({ type: 'error', code: err.code, message: err.message });
        } else reply({ type: 'ok', data: data.slice() });
      },
      (err: unknown) => {
        if (this.state !== 'started') return;
        if (err instanceof ParleyError && err.code in ERROR_STATUS) {
          reply({ type: 'error', code: err.code, message: err.message, details: wireDetails(err.details) });
        } else {
          reply({ type: 'error', code: 'unavailable', message: err instanceof Error ? err.message : String(err) });
        }
      },
    );
  }

  /** @internal A one-way message arrived (runs as this host): the handler's answer, or failure, goes nowhere. */
  receive(from: PeerId, protocol: string, payload: Uint8Array): void {
    if (this.state !== 'started') return;
    const handler = this.handlers.get(protocol);
    if (!handler) return;
    try {
      const result = handler(from, payload);
      if (result instanceof Promise) result.catch(() => {});
    } catch {
      // Dropped, as a request's failure would be answered with an error and then ignored.
    }
  }

  /** @internal Gossip arrived (runs as this host). */
  receiveGossip(from: PeerId, topic: string, payload: Uint8Array): void {
    if (this.state !== 'started') return;
    const set = this.topics.get(topic);
    if (!set) return;
    for (const handler of [...set]) {
      try {
        handler(from, payload);
      } catch (err) {
        this.host.crashed(err);
      }
    }
  }

  private receiveReply(id: number, reply: Reply): void {
    const p = this.pending.get(id);
    if (!p || this.state !== 'started') return; // duplicate, late, or dead
    this.settle(id);
    if (reply.type === 'ok') p.resolve(reply.data.slice());
    else p.reject(remoteError(reply.code, reply.message, reply.details));
  }

  /** Removes a pending request; false when it had already settled. */
  private settle(id: number): boolean {
    const p = this.pending.get(id);
    if (!p) return false;
    this.pending.delete(id);
    p.cancelTimer();
    const n = (this.inFlight.get(p.peer) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(p.peer);
    else this.inFlight.set(p.peer, n);
    return true;
  }
}
