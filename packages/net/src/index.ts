/**
 * @parley/net — the network seam of Parley: a libp2p transport (TCP, PSK
 * private network, noise, yamux, identify, ping, gossipsub) and an in-memory
 * twin, both implementing `Transport` from @parley/interface.
 *
 * @example
 * ```ts
 * import { createLibp2pTransport, loadOrCreatePsk, loadOrCreatePrivateKey } from '@parley/net';
 *
 * const transport = await createLibp2pTransport({
 *   listen: ['/ip4/127.0.0.1/tcp/4100'],
 *   bootstrap: ['/ip4/127.0.0.1/tcp/4101/p2p/12D3KooW...'],
 *   psk: await loadOrCreatePsk('./.parley/cluster.psk'),
 *   privateKey: await loadOrCreatePrivateKey('./.parley/peer.key'),
 * });
 * await transport.start();
 * transport.handle('ping', (from, bytes) => bytes);
 * transport.subscribe('news', (from, bytes) => console.log(from, bytes));
 * await transport.publish('news', new TextEncoder().encode('hello'));
 * ```
 */
import './polyfill.js';

export {
  decodeFrameBody,
  encodeFrame,
  type Frame,
  FrameReader,
  maxFrameBodyBytes,
} from './frame.js';
export {
  generatePrivateKey,
  generatePsk,
  loadOrCreatePrivateKey,
  loadOrCreatePsk,
  loadPrivateKey,
  loadPsk,
  PSK_BYTES,
  peerIdOf,
  savePrivateKey,
  savePsk,
  validatePsk,
} from './keys.js';
export {
  createLibp2pTransport,
  DEFAULT_LIBP2P_LIMITS,
  type Libp2pLimits,
  Libp2pTransport,
  type Libp2pTransportOptions,
  RPC_PROTOCOL,
} from './libp2p.js';
export { describeError, type NetLogger, silentLogger, stderrLogger } from './logger.js';
export {
  createMemoryNetwork,
  createMemoryTransport,
  MemoryNetwork,
  MemoryTransport,
  type MemoryTransportOptions,
} from './memory.js';
