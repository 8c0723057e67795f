/**
 * The lean channel as the transport uses it: the endpoints (channels.ts), the
 * port announced over libp2p (discovery.ts), and the peers it failed for,
 * which are served over libp2p streams until they reconnect.
 */
import type { Libp2p, PeerId as Libp2pPeerId, PrivateKey } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import { type PeerId, UnavailableError } from '@parley/interface';
import type { Libp2pLimits } from '../libp2p-limits.js';
import { describeError, type NetLogger } from '../logger.js';
import type { RpcStream } from '../rpc-stream.js';
import { LeanChannels } from './channels.js';
import { askPort, LEAN_PROTOCOL, leanListenHost, remoteHost, servePort } from './discovery.js';

export interface LeanCarrierOptions {
  readonly privateKey: PrivateKey;
  readonly psk: Uint8Array | undefined;
  readonly allowPeers: ReadonlySet<PeerId> | undefined;
  readonly listen: readonly string[];
  /** 0: any free port. */
  readonly port: number;
  readonly limits: Libp2pLimits;
  readonly maxBodyBytes: number;
  readonly log: NetLogger;
  readonly onInboundStream: (stream: RpcStream, from: PeerId) => void;
}

export class LeanCarrier {
  /** Peers whose lean channel failed: served over libp2p streams until they reconnect. */
  private readonly failed = new Set<PeerId>();

  private constructor(
    private readonly node: Libp2p,
    private readonly channels: LeanChannels,
    private readonly o: LeanCarrierOptions,
  ) {}

  /** Listens and answers `LEAN_PROTOCOL` on `node`. */
  static async start(node: Libp2p, o: LeanCarrierOptions): Promise<LeanCarrier> {
    const allow = o.allowPeers;
    const channels = new LeanChannels({
      privateKey: o.privateKey,
      psk: o.psk,
      admit: (peer) => !allow || allow.has(peer),
      log: o.log,
      handshakeTimeoutMs: o.limits.dialTimeoutMs,
      maxStreamsPerLink: o.limits.maxStreamsPerPeer,
      maxBufferedBytes: o.limits.maxWriteBufferBytes,
      maxInboundLinks: o.limits.maxConnections,
      // A batch of frames (FrameBatcher: one frame of any size, or up to 64 KiB of them) and the record's header.
      maxRecordBytes: Math.max(o.maxBodyBytes + 4, 64 * 1024) + 5,
      onInboundStream: o.onInboundStream,
    });
    await channels.listen(leanListenHost(o.listen), o.port);
    await node.handle(LEAN_PROTOCOL, (stream) => servePort(stream, channels.port), {
      maxInboundStreams: 4,
      maxOutboundStreams: 4,
    });
    return new LeanCarrier(node, channels, o);
  }

  get port(): number {
    return this.channels.port;
  }

  counts(): { outboundLinks: number; inboundLinks: number } {
    return this.channels.counts();
  }

  /** A stream to `peer` on the lean channel, or undefined when libp2p must carry it (the channel failed for this peer). */
  async open(peer: PeerId): Promise<RpcStream | undefined> {
    if (this.failed.has(peer)) return undefined;
    let target: Libp2pPeerId;
    try {
      target = peerIdFromString(peer);
    } catch {
      return undefined; // the libp2p path reports it
    }
    try {
      return await this.channels.openStream(peer, async () => {
        const port = await askPort(this.node, target, this.o.limits.dialTimeoutMs);
        const host = remoteHost(this.node, target);
        if (!host) throw new UnavailableError(`no connection to ${peer} to take its address from`, { peer });
        return { host, port };
      });
    } catch (err) {
      this.failed.add(peer);
      this.o.log.debug('lean channel unavailable; using libp2p streams', { peer, error: describeError(err) });
      return undefined;
    }
  }

  /** libp2p says `peer` is gone: close its links, and try the lean channel again when it is back. */
  peerGone(peer: PeerId): void {
    this.failed.delete(peer);
    this.channels.drop(peer);
  }

  stop(): Promise<void> {
    return this.channels.stop();
  }
}
