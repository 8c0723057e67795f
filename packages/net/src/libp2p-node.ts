/**
 * The libp2p node behind the production Transport (./libp2p.ts): TCP, the
 * private-network PSK (with write batching), noise, yamux (half-window
 * updates), identify, ping and
 * gossipsub, with Parley's limits, allow-list gate and gossip settings.
 */
import { noise } from '@chainsafe/libp2p-noise';
import { type GossipSub, gossipsub } from '@libp2p/gossipsub';
import { identify } from '@libp2p/identify';
import type { Libp2p, PeerId as Libp2pPeerId, PrivateKey } from '@libp2p/interface';
import { ping } from '@libp2p/ping';
import { preSharedKey } from '@libp2p/pnet';
import { tcp } from '@libp2p/tcp';
import { InvalidArgumentError, type PeerId } from '@parley/interface';
import { createLibp2p, type Libp2pOptions } from 'libp2p';
import { GOSSIP_ID_BYTES, gossipOverheadBytes } from './frame.js';
import type { Libp2pLimits } from './libp2p-limits.js';
import { batchingProtector } from './write-batching.js';
import { halfWindowYamux } from './yamux-window.js';

export type Services = { pubsub: GossipSub; identify: unknown; ping: unknown };

export interface ParleyLibp2pOptions {
  readonly privateKey: PrivateKey;
  readonly listen: string[];
  readonly limits: Libp2pLimits;
  readonly psk?: Uint8Array;
  /** Only these peers may connect (both ways). */
  readonly allowPeers?: ReadonlySet<PeerId>;
  readonly mdns: boolean;
}

/** Creates (does not start) the libp2p node of a Parley transport. */
export async function createParleyLibp2p(o: ParleyLibp2pOptions): Promise<Libp2p<Services>> {
  const limits = o.limits;
  const allow = o.allowPeers;
  const deny = allow ? (peer: Libp2pPeerId) => !allow.has(peer.toString()) : undefined;
  const peerDiscovery: NonNullable<Libp2pOptions['peerDiscovery']> = [];
  if (o.mdns) {
    const moduleName = '@libp2p/mdns';
    const mdnsModule = (await import(moduleName).catch(() => {
      throw new InvalidArgumentError('mdns: true needs the optional package @libp2p/mdns');
    })) as { mdns: () => NonNullable<Libp2pOptions['peerDiscovery']>[number] };
    peerDiscovery.push(mdnsModule.mdns());
  }
  return createLibp2p({
    privateKey: o.privateKey,
    start: false,
    addresses: { listen: o.listen },
    // No inactivity timeout (libp2p's TCP default closes a socket quiet for 2 minutes): an idle
    // cluster's connections carry nothing for minutes, and each one closed was dialled again at
    // once (the bootstrap redial), with a handshake, identify, gossipsub's subscriptions and an
    // anti-entropy round, in bursts that cost an idle node of a 20-node cluster up to 60 ms of CPU
    // per second. A vanished peer is found by the kernel's keep-alive (`keepAliveMs`).
    transports: [
      tcp({
        maxConnections: limits.maxConnections,
        inboundSocketInactivityTimeout: 0,
        outboundSocketInactivityTimeout: 0,
        dialOpts: { keepAlive: true, keepAliveInitialDelay: limits.keepAliveMs },
        listenOpts: { keepAlive: true, keepAliveInitialDelay: limits.keepAliveMs },
      }),
    ],
    connectionEncrypters: [noise()],
    // Keep-alive: the kernel's (above), backed by libp2p's connection monitor every
    // `pingIntervalMs` (10 min). Yamux's own ping every 30 s (which only logs a ping that fails)
    // cost an idle node of a 20-node cluster 19 pings and 19 pongs, each through noise and the
    // PSK, every 30 s: it is off.
    streamMuxers: [halfWindowYamux({ maxInboundStreams: limits.maxStreamsPerPeer * 2 + 64, enableKeepAlive: false })],
    connectionProtector: batchingProtector(o.psk ? preSharedKey({ psk: o.psk }) : undefined),
    ...(deny
      ? {
          connectionGater: {
            denyDialPeer: deny,
            denyInboundEncryptedConnection: deny,
            denyOutboundEncryptedConnection: deny,
          },
        }
      : {}),
    connectionManager: {
      maxConnections: limits.maxConnections,
      dialTimeout: limits.dialTimeoutMs,
      inboundUpgradeTimeout: limits.dialTimeoutMs,
      // Every peer of a loopback or single-host cluster shares one address.
      inboundConnectionThreshold: Math.max(100, limits.maxConnections),
      maxIncomingPendingConnections: 64,
      reconnectRetries: 0,
    },
    connectionMonitor: limits.pingIntervalMs > 0 ? { pingInterval: limits.pingIntervalMs } : { enabled: false },
    peerDiscovery,
    services: {
      identify: identify(),
      ping: ping(),
      pubsub: gossipsub({
        globalSignaturePolicy: 'StrictNoSign',
        allowPublishToZeroTopicPeers: true,
        emitSelf: false,
        floodPublish: true,
        maxInboundDataLength: limits.maxMessageBytes + gossipOverheadBytes() + 64 * 1024,
        fallbackToFloodsub: false,
        // Every Parley envelope starts with a version byte and a unique 16-byte id: that is
        // the message id, so no hashing (and no async hop) on each node for each message.
        msgIdFn: (message) => gossipMessageId(message.data),
        fastMsgIdFn: (message) => Buffer.from(gossipMessageId(message.data ?? new Uint8Array())).toString('hex'),
        // Peer scoring's IP colocation penalty (P6) counts the peers that share an address:
        // beyond 10, each one's score falls quadratically (-5 per surplus peer squared), so with
        // 15 nodes on one host a node stops publishing to them (-50), ignores their gossip (-80)
        // and forms no mesh — gossip goes silent and only anti-entropy is left. Parley runs many
        // nodes per host and admits peers by the cluster key or allow-list, not by address, so
        // the penalty is off; the other score terms stay as gossipsub sets them.
        scoreParams: { IPColocationFactorWeight: 0 },
        // Mesh tags in the peer store only steer libp2p's connection pruning, which Parley does not
        // use (connections are capped, not pruned by value); each graft and prune was a peer-store
        // write (encode, compare, save), the largest item of an idle node's CPU.
        tagMeshPeers: false,
      }),
    },
  });
}

/** The gossip message id: the envelope's version and unique id, or the whole data when it is too short to be an envelope. */
function gossipMessageId(data: Uint8Array): Uint8Array {
  return data.slice(0, Math.min(data.length, 1 + GOSSIP_ID_BYTES));
}
