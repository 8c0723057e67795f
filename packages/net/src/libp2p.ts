/**
 * The production Transport: libp2p over TCP with a private-network PSK,
 * noise encryption, yamux multiplexing, identify, ping and gossipsub.
 *
 * Requests travel on ONE long-lived stream per (peer, application protocol),
 * opened on first use and multiplexed by request id (see frame.ts). Opening a
 * stream costs about a millisecond on loopback; a frame on an open stream
 * costs a tenth of that, which is why streams are kept. One-way messages
 * (`send`) travel on the same stream as the protocol's requests, as message
 * frames that are never answered: half the frames of a request whose reply
 * says nothing.
 */
import './polyfill.js';
import { privateKeyFromProtobuf } from '@libp2p/crypto/keys';
import type { Libp2p, PeerId as Libp2pPeerId, PrivateKey, Stream } from '@libp2p/interface';
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import {
  ClosedError,
  Emitter,
  type GossipHandler,
  InvalidArgumentError,
  type ParleyError,
  type PeerId,
  type RequestHandler,
  type RequestOptions,
  type Transport,
  type TransportEvents,
  UnavailableError,
  type Unsubscribe,
  ValueTooLargeError,
} from '@parley/interface';
import { BootstrapDialer } from './bootstrap.js';
import {
  decodeGossip,
  encodeFrame,
  encodeGossip,
  errorFromFrame,
  type Frame,
  GOSSIP_ID_BYTES,
  MAX_PROTOCOL_BYTES,
  maxFrameBodyBytes,
  readFrames,
  WIRE_VERSION,
} from './frame.js';
import { type InboundHost, serveStream } from './inbound.js';
import { generatePrivateKey, validatePsk } from './keys.js';
import { LeanCarrier } from './lean/carrier.js';
import { DEFAULT_LIBP2P_LIMITS, type Libp2pLimits } from './libp2p-limits.js';
import { createParleyLibp2p, type Services } from './libp2p-node.js';
import { describeError, type NetLogger, stderrLogger } from './logger.js';
import { PendingRequests } from './pending.js';
import { libp2pRpcStream, type RpcStream } from './rpc-stream.js';
import { FrameBatcher } from './stream-batching.js';

export { DEFAULT_LIBP2P_LIMITS, type Libp2pLimits } from './libp2p-limits.js';

/** The libp2p protocol id of Parley's request/response streams. */
export const RPC_PROTOCOL = '/parley/rpc/1.0.0';

export interface Libp2pTransportOptions {
  /** Multiaddrs to listen on, e.g. `/ip4/127.0.0.1/tcp/0`. */
  listen: string[];
  /** Multiaddrs of peers to connect to and keep reconnecting to (with or without `/p2p/<id>`). */
  bootstrap?: string[];
  /** The node's identity (a libp2p key or its protobuf bytes); a fresh Ed25519 key when absent. */
  privateKey?: PrivateKey | Uint8Array;
  /**
   * The cluster's pre-shared key (libp2p swarm-key format, see `generatePsk`).
   * Without it and without `allowPeers`, creation fails unless `openCluster` is set.
   */
  psk?: Uint8Array;
  /** When set, only these peer ids may connect, in either direction. */
  allowPeers?: PeerId[];
  /** Explicitly run without PSK and allow-list (anyone who can reach the port may join). */
  openCluster?: boolean;
  limits?: Partial<Libp2pLimits>;
  /** Local-network discovery; needs the optional `@libp2p/mdns` package. Off by default. */
  mdns?: boolean;
  /**
   * The lean channel for requests and one-way messages (on by default): a second TCP port
   * with one ChaCha20-Poly1305 layer keyed by an X25519 exchange salted with the PSK, instead
   * of PSK + noise + yamux on every frame (gossip stays on libp2p). `port` fixes its port
   * (default: any free one, announced to peers over libp2p). A peer that cannot be reached
   * on it is served over libp2p streams, as with `false`.
   */
  lean?: boolean | { port?: number };
  logger?: NetLogger;
}

const textEncoder = new TextEncoder();

/** Creates a libp2p transport. Call `start()` to listen and dial the bootstrap list. */
export async function createLibp2pTransport(options: Libp2pTransportOptions): Promise<Libp2pTransport> {
  let privateKey: PrivateKey | undefined;
  if (options.privateKey instanceof Uint8Array) {
    try {
      privateKey = privateKeyFromProtobuf(options.privateKey);
    } catch (err) {
      throw new InvalidArgumentError(`privateKey is not a libp2p private key: ${describeError(err)}`);
    }
  } else if (options.privateKey) privateKey = options.privateKey;
  else privateKey = await generatePrivateKey();
  return new Libp2pTransport(options, privateKey);
}

/** One long-lived outbound stream to a peer for one application protocol. */
class OutboundChannel {
  stream: RpcStream | undefined;
  writer: FrameBatcher | undefined;
  opening: Promise<RpcStream> | undefined;
  readonly pending = new Set<number>();

  constructor(
    readonly peer: PeerId,
    readonly protocol: string,
  ) {}
}

export class Libp2pTransport implements Transport {
  readonly peerId: PeerId;
  readonly limits: Libp2pLimits;
  private readonly events: Emitter<TransportEvents>;
  private readonly log: NetLogger;
  private node: Libp2p<Services> | undefined;
  private state: 'new' | 'starting' | 'started' | 'stopped' = 'new';
  private readonly handlers = new Map<string, RequestHandler>();
  private readonly gossipHandlers = new Map<string, Set<GossipHandler>>();
  private readonly requests: PendingRequests;
  private readonly channels = new Map<string, OutboundChannel>();
  private lean: LeanCarrier | undefined;
  private nextRequestId = 1;
  private sentMessages = 0;
  /** Counted here and by the streams this node serves. */
  private readonly counts = { abortedStreams: 0, droppedMessages: 0 };
  private readonly inbound: InboundHost;
  private readonly maxBodyBytes: number;
  private readonly gossipIdPrefix = crypto.getRandomValues(new Uint8Array(8));
  private gossipCounter = 0n;
  private readonly bootstrap: BootstrapDialer;
  /** What peers() answers until a connection opens or closes (undefined: list again). */
  private connectedPeers: PeerId[] | undefined;
  private readonly allowPeers: Set<PeerId> | undefined;

  constructor(
    private readonly options: Libp2pTransportOptions,
    private readonly privateKey: PrivateKey,
  ) {
    this.limits = { ...DEFAULT_LIBP2P_LIMITS, ...options.limits };
    this.requests = new PendingRequests(this.limits.maxInFlightPerPeer);
    this.log = options.logger ?? stderrLogger;
    this.events = new Emitter((err) => this.log.warn('event listener threw', { error: describeError(err) }));
    this.peerId = peerIdFromPrivateKey(privateKey).toString();
    this.maxBodyBytes = maxFrameBodyBytes(this.limits.maxMessageBytes);
    this.inbound = {
      handlers: this.handlers,
      limits: this.limits,
      maxBodyBytes: this.maxBodyBytes,
      log: this.log,
      streams: new Set(),
      counts: this.counts,
    };
    if (options.psk) validatePsk(options.psk);
    if (!options.psk && !options.allowPeers && !options.openCluster) {
      throw new InvalidArgumentError(
        'a Parley cluster is closed by default: pass `psk` and/or `allowPeers`, or set `openCluster: true`',
      );
    }
    this.allowPeers = options.allowPeers ? new Set(options.allowPeers) : undefined;
    this.bootstrap = new BootstrapDialer(options.bootstrap ?? [], this.peerId, this.log);
  }

  on<K extends keyof TransportEvents>(type: K, listener: (payload: TransportEvents[K]) => void): Unsubscribe {
    return this.events.on(type, listener);
  }

  /** Counters for tests and metrics: open request streams and streams closed for misbehaviour. */
  stats(): {
    inboundStreams: number;
    outboundChannels: number;
    pendingRequests: number;
    abortedStreams: number;
    /** One-way messages written to a stream. */
    sentMessages: number;
    /** One-way messages dropped: the stream would not open or closed first, or no handler / a full window at the peer. */
    droppedMessages: number;
    /** Lean-channel links: dialed by this node, and dialed by peers. */
    leanLinks: { outbound: number; inbound: number };
    /** The lean channel's TCP port (0: off or not started). */
    leanPort: number;
  } {
    const lean = this.lean?.counts();
    return {
      inboundStreams: this.inbound.streams.size,
      outboundChannels: this.channels.size,
      pendingRequests: this.requests.size,
      abortedStreams: this.counts.abortedStreams,
      sentMessages: this.sentMessages,
      droppedMessages: this.counts.droppedMessages,
      leanLinks: { outbound: lean?.outboundLinks ?? 0, inbound: lean?.inboundLinks ?? 0 },
      leanPort: this.lean?.port ?? 0,
    };
  }

  /** The addresses this node listens on, each ending in `/p2p/<peer id>`; empty before `start()`. */
  addresses(): string[] {
    return this.node ? this.node.getMultiaddrs().map((ma) => ma.toString()) : [];
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new InvalidArgumentError(`transport cannot start: it is ${this.state}`);
    this.state = 'starting';
    try {
      await this.startNode();
    } catch (err) {
      this.state = 'stopped';
      await Promise.resolve(this.node?.stop()).catch(() => {});
      throw err;
    }
  }

  private async startNode(): Promise<void> {
    const limits = this.limits;
    const allow = this.allowPeers;
    const node = await createParleyLibp2p({
      privateKey: this.privateKey,
      listen: this.options.listen,
      limits,
      ...(this.options.psk ? { psk: this.options.psk } : {}),
      ...(allow ? { allowPeers: allow } : {}),
      mdns: this.options.mdns === true,
    });
    this.node = node;
    // peers() lists again after any of these (libp2p's own listeners may update its map after ours).
    const connectionsChanged = () => {
      this.connectedPeers = undefined;
    };
    node.addEventListener('connection:open', connectionsChanged);
    node.addEventListener('connection:close', connectionsChanged);
    node.addEventListener('peer:connect', connectionsChanged);
    node.addEventListener('peer:disconnect', connectionsChanged);
    node.addEventListener('peer:connect', (evt) => {
      this.events.emit('peer:connect', evt.detail.toString());
    });
    node.addEventListener('peer:disconnect', (evt) => {
      const peer = evt.detail.toString();
      this.lean?.peerGone(peer);
      this.failPeer(peer, new UnavailableError(`peer ${peer} disconnected`, { peer }));
      this.events.emit('peer:disconnect', peer);
    });
    node.services.pubsub.addEventListener('message', (evt) => {
      this.deliverGossip(evt.detail.topic, evt.detail.data);
    });
    await node.handle(
      RPC_PROTOCOL,
      (stream, connection) =>
        serveStream(
          this.inbound,
          libp2pRpcStream(stream, limits.maxWriteBufferBytes),
          connection.remotePeer.toString(),
        ),
      { maxInboundStreams: limits.maxStreamsPerPeer, maxOutboundStreams: limits.maxStreamsPerPeer },
    );
    await this.startLean(node);
    await node.start();
    for (const topic of this.gossipHandlers.keys()) node.services.pubsub.subscribe(topic);
    if (this.state !== 'starting') {
      await node.stop(); // stopped while starting
      return;
    }
    this.state = 'started';
    this.bootstrap.start(node, () => this.peers(), limits.redialIntervalMs, limits.dialTimeoutMs);
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const wasStarted = this.state === 'started' || this.state === 'starting';
    this.state = 'stopped';
    this.bootstrap.stop();
    this.requests.failAll(new ClosedError('transport'));
    this.channels.clear();
    await this.lean?.stop();
    if (wasStarted && this.node) await this.node.stop();
  }

  /** Dials an address now (beyond the bootstrap list) and returns the peer id that answered. */
  async connect(address: string): Promise<PeerId> {
    const node = this.requireNode();
    try {
      const connection = await node.dial(multiaddr(address), {
        signal: AbortSignal.timeout(this.limits.dialTimeoutMs),
      });
      return connection.remotePeer.toString();
    } catch (err) {
      throw new UnavailableError(`cannot connect to ${address}: ${describeError(err)}`, { address });
    }
  }

  handle(protocol: string, handler: RequestHandler): void {
    checkProtocol(protocol);
    this.handlers.set(protocol, handler);
  }

  unhandle(protocol: string): void {
    this.handlers.delete(protocol);
  }

  peers(): PeerId[] {
    if (!this.node || this.state !== 'started') return [];
    // Asked every second by the bootstrap round and on every gossip and anti-entropy round: the
    // list is made again only after a connection opened or closed (listing libp2p's connections
    // and naming their peers cost more than the rest of an idle node's round).
    if (this.connectedPeers === undefined) {
      const out = new Set<PeerId>();
      for (const connection of this.node.getConnections()) {
        if (connection.status === 'open') out.add(connection.remotePeer.toString());
      }
      this.connectedPeers = [...out];
    }
    return [...this.connectedPeers];
  }

  request(peer: PeerId, protocol: string, payload: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    if (this.state !== 'started') return Promise.reject(new ClosedError('transport'));
    checkProtocol(protocol);
    if (payload.length > this.limits.maxMessageBytes) {
      return Promise.reject(new ValueTooLargeError(payload.length, this.limits.maxMessageBytes));
    }
    if (peer === this.peerId) return Promise.reject(new UnavailableError('cannot send a request to self', { peer }));
    const full = this.requests.windowFull(peer);
    if (full) return Promise.reject(full);
    const timeoutMs = options.timeoutMs ?? this.limits.defaultTimeoutMs;
    const id = this.allocateId();
    const response = this.requests.open(id, peer, protocol, timeoutMs);
    const frame = encodeFrame({ type: 'request', id, payload });
    const channel = this.channelFor(peer, protocol);
    channel.pending.add(id);
    if (channel.stream) {
      this.sendOn(channel, frame, id, options.coalesce === true);
    } else {
      this.openChannel(channel).then(
        () => {
          if (this.requests.has(id)) this.sendOn(channel, frame, id);
        },
        (err: ParleyError) => this.requests.fail(id, err),
      );
    }
    return response;
  }

  send(peer: PeerId, protocol: string, payload: Uint8Array): Promise<void> {
    if (this.state !== 'started') return Promise.reject(new ClosedError('transport'));
    checkProtocol(protocol);
    if (payload.length > this.limits.maxMessageBytes) {
      return Promise.reject(new ValueTooLargeError(payload.length, this.limits.maxMessageBytes));
    }
    if (peer === this.peerId) return Promise.reject(new UnavailableError('cannot send a message to self', { peer }));
    const frame = encodeFrame({ type: 'message', payload });
    const channel = this.channelFor(peer, protocol);
    if (channel.stream) return this.writeMessage(channel, frame);
    // Frames queue behind the stream's opening in send order (each waits on the same promise).
    return this.openChannel(channel).then(
      () => this.writeMessage(channel, frame),
      (err: ParleyError) => {
        this.counts.droppedMessages++;
        throw err;
      },
    );
  }

  subscribe(topic: string, handler: GossipHandler): Unsubscribe {
    let set = this.gossipHandlers.get(topic);
    if (!set) {
      set = new Set();
      this.gossipHandlers.set(topic, set);
      if (this.node && this.state === 'started') this.node.services.pubsub.subscribe(topic);
    }
    set.add(handler);
    return () => {
      const current = this.gossipHandlers.get(topic);
      if (!current?.delete(handler) || current.size > 0) return;
      this.gossipHandlers.delete(topic);
      if (this.node && this.state === 'started') this.node.services.pubsub.unsubscribe(topic);
    };
  }

  async publish(topic: string, payload: Uint8Array): Promise<void> {
    if (this.state !== 'started' || !this.node) throw new ClosedError('transport');
    if (payload.length > this.limits.maxMessageBytes) {
      throw new ValueTooLargeError(payload.length, this.limits.maxMessageBytes);
    }
    const id = new Uint8Array(GOSSIP_ID_BYTES);
    id.set(this.gossipIdPrefix, 0);
    new DataView(id.buffer).setBigUint64(8, this.gossipCounter++);
    const data = encodeGossip({ id, origin: this.peerId, payload });
    try {
      await this.node.services.pubsub.publish(topic, data);
    } catch (err) {
      // Best effort by contract: anti-entropy repairs what gossip loses.
      this.log.debug('gossip publish failed', { topic, error: describeError(err) });
    }
  }

  // ---- outbound requests ----

  private allocateId(): number {
    for (;;) {
      const id = this.nextRequestId;
      this.nextRequestId = id >= 0xffff_ffff ? 1 : id + 1;
      if (!this.requests.has(id)) return id;
    }
  }

  private channelFor(peer: PeerId, protocol: string): OutboundChannel {
    const key = `${peer}\n${protocol}`;
    let channel = this.channels.get(key);
    if (channel?.stream && !channel.stream.writable) {
      // Closing but its close event has not run yet: its own requests fail with it; start afresh.
      this.channels.delete(key);
      channel = undefined;
    }
    if (!channel) {
      channel = new OutboundChannel(peer, protocol);
      this.channels.set(key, channel);
    }
    return channel;
  }

  private openChannel(channel: OutboundChannel): Promise<RpcStream> {
    if (channel.opening) return channel.opening;
    channel.opening = (async () => {
      const stream = (await this.lean?.open(channel.peer)) ?? (await this.openLibp2pStream(channel.peer));
      if (this.state !== 'started') {
        stream.abort(new ClosedError('transport'));
        throw new ClosedError('transport');
      }
      stream.send(encodeFrame({ type: 'hello', version: WIRE_VERSION, protocol: channel.protocol }));
      readFrames(
        stream,
        this.maxBodyBytes,
        (frame) => {
          this.onResponse(channel, frame);
          return true;
        },
        (why, err) => {
          this.log.warn(why, { peer: channel.peer, error: describeError(err) });
          stream.abort(err as Error);
        },
      );
      stream.onClose(() => this.closeChannel(channel, stream));
      channel.writer = new FrameBatcher(stream, (err) => stream.abort(err as Error));
      channel.stream = stream;
      return stream;
    })();
    channel.opening.catch(() => {
      // The channel failed to open: forget it so the next request tries again.
      if (this.channels.get(`${channel.peer}\n${channel.protocol}`) === channel) {
        this.channels.delete(`${channel.peer}\n${channel.protocol}`);
      }
    });
    return channel.opening;
  }

  private async openLibp2pStream(peer: PeerId): Promise<RpcStream> {
    const node = this.requireNode();
    let target: Libp2pPeerId;
    try {
      target = peerIdFromString(peer);
    } catch {
      throw new UnavailableError(`'${peer}' is not a peer id`, { peer });
    }
    let stream: Stream;
    try {
      stream = await node.dialProtocol(target, RPC_PROTOCOL, {
        signal: AbortSignal.timeout(this.limits.dialTimeoutMs),
      });
    } catch (err) {
      throw new UnavailableError(`cannot reach ${peer}: ${describeError(err)}`, { peer });
    }
    return libp2pRpcStream(stream, this.limits.maxWriteBufferBytes);
  }

  private async startLean(node: Libp2p<Services>): Promise<void> {
    const option = this.options.lean ?? true;
    if (option === false) return;
    this.lean = await LeanCarrier.start(node, {
      privateKey: this.privateKey,
      psk: this.options.psk,
      allowPeers: this.allowPeers,
      listen: this.options.listen,
      port: option === true ? 0 : (option.port ?? 0),
      limits: this.limits,
      maxBodyBytes: this.maxBodyBytes,
      log: this.log,
      onInboundStream: (stream, from) => serveStream(this.inbound, stream, from),
    });
  }

  private sendOn(channel: OutboundChannel, frame: Uint8Array, id: number, linger = false): void {
    const stream = channel.stream;
    if (!stream?.writable || !channel.writer) {
      this.requests.fail(id, new UnavailableError(`stream to ${channel.peer} is closed`, { peer: channel.peer }));
      return;
    }
    channel.writer.write(frame, linger);
  }

  private writeMessage(channel: OutboundChannel, frame: Uint8Array): Promise<void> {
    if (this.state !== 'started') return Promise.reject(new ClosedError('transport'));
    if (!channel.stream?.writable || !channel.writer) {
      this.counts.droppedMessages++;
      return Promise.reject(new UnavailableError(`stream to ${channel.peer} is closed`, { peer: channel.peer }));
    }
    channel.writer.write(frame);
    this.sentMessages++;
    return Promise.resolve();
  }

  private onResponse(channel: OutboundChannel, frame: Frame): void {
    if (frame.type !== 'response' && frame.type !== 'error') {
      this.log.warn('unexpected frame on a request stream', { peer: channel.peer, frame: frame.type });
      return;
    }
    channel.pending.delete(frame.id);
    if (this.requests.peerOf(frame.id) !== channel.peer) return; // timed out already
    if (frame.type === 'response') this.requests.resolve(frame.id, frame.payload);
    else this.requests.fail(frame.id, errorFromFrame(frame));
  }

  private closeChannel(channel: OutboundChannel, stream: RpcStream): void {
    const key = `${channel.peer}\n${channel.protocol}`;
    if (this.channels.get(key) === channel) this.channels.delete(key);
    if (channel.stream !== stream) return;
    for (const id of channel.pending) {
      this.requests.fail(id, new UnavailableError(`stream to ${channel.peer} closed`, { peer: channel.peer }));
    }
    channel.pending.clear();
  }

  private failPeer(peer: PeerId, err: ParleyError): void {
    this.requests.failPeer(peer, err);
  }

  // ---- gossip ----

  private deliverGossip(topic: string, data: Uint8Array): void {
    const handlers = this.gossipHandlers.get(topic);
    if (!handlers || handlers.size === 0) return;
    let envelope: ReturnType<typeof decodeGossip>;
    try {
      envelope = decodeGossip(data);
    } catch (err) {
      this.log.warn('dropped an undecodable gossip message', { topic, error: describeError(err) });
      return;
    }
    if (envelope.payload.length > this.limits.maxMessageBytes) {
      this.log.warn('dropped an oversized gossip message', { topic, sizeBytes: envelope.payload.length });
      return;
    }
    if (envelope.origin === this.peerId) return;
    for (const handler of [...handlers]) {
      try {
        handler(envelope.origin, envelope.payload);
      } catch (err) {
        this.log.warn('gossip handler threw', { topic, error: describeError(err) });
      }
    }
  }

  private requireNode(): Libp2p<Services> {
    if (!this.node || this.state !== 'started') throw new ClosedError('transport');
    return this.node;
  }
}

function checkProtocol(protocol: string): void {
  const bytes = textEncoder.encode(protocol).length;
  if (bytes === 0 || bytes > MAX_PROTOCOL_BYTES) {
    throw new InvalidArgumentError(`protocol name must be 1..${MAX_PROTOCOL_BYTES} bytes`, { protocol });
  }
}
