/**
 * The lean channel's endpoints on one node: a TCP listener for links that
 * peers dial, and this node's own outbound link per peer, dialed on first use
 * and shared by every protocol's stream to that peer. The transport learns a
 * peer's lean port over libp2p (`LEAN_PROTOCOL`) and dials the address its
 * libp2p connection to that peer uses.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import type { PrivateKey } from '@libp2p/interface';
import { type PeerId, UnavailableError } from '@parley/interface';
import { describeError, type NetLogger } from '../logger.js';
import type { RpcStream } from '../rpc-stream.js';
import { handshake, type Role } from './handshake.js';
import { LeanLink } from './link.js';

export interface LeanOptions {
  readonly privateKey: PrivateKey;
  readonly psk: Uint8Array | undefined;
  readonly admit: (peer: PeerId) => boolean;
  readonly log: NetLogger;
  readonly handshakeTimeoutMs: number;
  readonly maxStreamsPerLink: number;
  readonly maxBufferedBytes: number;
  readonly maxInboundLinks: number;
  /** Largest record plaintext: the largest frame batch plus the record's own header. */
  readonly maxRecordBytes: number;
  /** A stream a peer opened on its link to this node. */
  readonly onInboundStream: (stream: RpcStream, from: PeerId) => void;
}

export class LeanChannels {
  private server: Server | undefined;
  private listenPort = 0;
  private readonly outbound = new Map<PeerId, Promise<LeanLink>>();
  private readonly inbound = new Set<LeanLink>();
  private readonly handshaking = new Set<Socket>();
  private stopped = false;

  constructor(private readonly o: LeanOptions) {}

  /** Listens on `host` (port 0: any free port). */
  async listen(host: string, port: number): Promise<void> {
    const server = createServer({ noDelay: true, pauseOnConnect: false }, (socket) => this.accept(socket));
    server.maxConnections = this.o.maxInboundLinks + 16;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.o.log.warn('lean listener failed', { error: describeError(err) }));
    this.server = server;
    const address = server.address();
    this.listenPort = typeof address === 'object' && address ? address.port : 0;
  }

  /** The port peers dial; 0 before `listen`. */
  get port(): number {
    return this.listenPort;
  }

  /** Counts for `stats()`. */
  counts(): { outboundLinks: number; inboundLinks: number } {
    return { outboundLinks: this.outbound.size, inboundLinks: this.inbound.size };
  }

  /** Opens a stream on this node's link to `peer`, dialing `host:port` first when there is none. */
  async openStream(peer: PeerId, address: () => Promise<{ host: string; port: number }>): Promise<RpcStream> {
    let link = this.outbound.get(peer);
    if (!link) {
      link = this.dial(peer, address);
      this.outbound.set(peer, link);
      link.catch(() => {
        if (this.outbound.get(peer) === link) this.outbound.delete(peer);
      });
    }
    return (await link).openStream();
  }

  /** Closes the link to `peer` (both directions), e.g. when libp2p says the peer is gone. */
  drop(peer: PeerId): void {
    const link = this.outbound.get(peer);
    if (link) {
      this.outbound.delete(peer);
      link.then(
        (l) => l.close(undefined),
        () => {},
      );
    }
    for (const l of this.inbound) if (l.peer === peer) l.close(undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const socket of this.handshaking) socket.destroy();
    for (const link of this.inbound) link.close(undefined);
    for (const link of this.outbound.values())
      link.then(
        (l) => l.close(undefined),
        () => {},
      );
    this.outbound.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async dial(peer: PeerId, address: () => Promise<{ host: string; port: number }>): Promise<LeanLink> {
    const { host, port } = await address();
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = tcpConnect({ host, port, noDelay: true });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new UnavailableError(`lean dial to ${host}:${port} timed out`, { peer }));
      }, this.o.handshakeTimeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.off('error', failed);
        resolve(s);
      });
      const failed = (err: Error) => {
        clearTimeout(timer);
        reject(new UnavailableError(`lean dial to ${host}:${port} failed: ${describeError(err)}`, { peer }));
      };
      s.once('error', failed);
    });
    return this.secure(socket, 'dialer', peer);
  }

  private accept(socket: Socket): void {
    if (this.stopped || this.inbound.size >= this.o.maxInboundLinks) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    this.secure(socket, 'listener', undefined).catch((err: unknown) => {
      this.o.log.warn('refused a lean connection', { error: describeError(err) });
    });
  }

  private async secure(socket: Socket, role: Role, expectPeer: PeerId | undefined): Promise<LeanLink> {
    this.handshaking.add(socket);
    try {
      const done = await handshake(socket, {
        role,
        privateKey: this.o.privateKey,
        psk: this.o.psk,
        ...(expectPeer !== undefined ? { expectPeer } : {}),
        admit: this.o.admit,
        timeoutMs: this.o.handshakeTimeoutMs,
      });
      if (this.stopped) throw new UnavailableError('transport stopped');
      done.opener.allow(this.o.maxRecordBytes);
      const peer = done.peer;
      const link = new LeanLink(socket, done.sealer, done.opener, {
        role,
        peer,
        maxStreams: this.o.maxStreamsPerLink,
        maxBufferedBytes: this.o.maxBufferedBytes,
        onStream: (stream) => this.o.onInboundStream(stream, peer),
        onClose: (closed, reason) => {
          if (reason) this.o.log.debug('lean link closed', { peer, error: describeError(reason) });
          this.inbound.delete(closed);
          const mine = this.outbound.get(peer);
          if (mine) {
            mine.then(
              (l) => l === closed && this.outbound.get(peer) === mine && this.outbound.delete(peer),
              () => {},
            );
          }
        },
      });
      if (role === 'listener' && link.open) this.inbound.add(link);
      return link;
    } catch (err) {
      socket.destroy();
      throw err;
    } finally {
      this.handshaking.delete(socket);
    }
  }
}
