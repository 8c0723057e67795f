/**
 * The bootstrap list: dialled at start and again every `redialIntervalMs`
 * while a peer on it is not connected, at most one dial per address at a time.
 * An address without `/p2p/<id>` is known by the peer that answered it last.
 */
import type { Libp2p } from '@libp2p/interface';
import { type Multiaddr, multiaddr } from '@multiformats/multiaddr';
import { InvalidArgumentError, type PeerId } from '@parley/interface';
import { describeError, type NetLogger } from './logger.js';

export class BootstrapDialer {
  /** Each address, with the peer id its `/p2p/` component names (parsed once: a round runs every second). */
  private readonly addresses: Array<{ addr: Multiaddr; key: string; peer: PeerId | undefined }>;
  private readonly dialing = new Set<string>();
  private readonly answeredBy = new Map<string, PeerId>();
  private timer: ReturnType<typeof setInterval> | undefined;

  /** Throws InvalidArgumentError on an address that is not a multiaddr. */
  constructor(
    addresses: readonly string[],
    private readonly self: PeerId,
    private readonly log: NetLogger,
  ) {
    try {
      this.addresses = addresses.map((text) => {
        const addr = multiaddr(text);
        return { addr, key: addr.toString(), peer: addr.getComponents().find((c) => c.name === 'p2p')?.value };
      });
    } catch (err) {
      throw new InvalidArgumentError(`bad bootstrap multiaddr: ${describeError(err)}`);
    }
  }

  /** Dials now and every `intervalMs`; `connected` names the peers connected at each round. */
  start(node: Libp2p, connected: () => PeerId[], intervalMs: number, dialTimeoutMs: number): void {
    const round = () => this.dialRound(node, new Set(connected()), dialTimeoutMs);
    round();
    this.timer = setInterval(round, intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private dialRound(node: Libp2p, connected: ReadonlySet<PeerId>, dialTimeoutMs: number): void {
    for (const { addr, key, peer } of this.addresses) {
      const target = peer ?? this.answeredBy.get(key);
      if (target === this.self) continue;
      if (target && connected.has(target)) continue;
      if (this.dialing.has(key)) continue;
      this.dialing.add(key);
      node
        .dial(addr, { signal: AbortSignal.timeout(dialTimeoutMs) })
        .then(
          (connection) => {
            this.answeredBy.set(key, connection.remotePeer.toString());
            this.log.debug('connected to bootstrap peer', { address: key, peer: connection.remotePeer.toString() });
          },
          (err: unknown) => this.log.debug('bootstrap dial failed', { address: key, error: describeError(err) }),
        )
        .finally(() => this.dialing.delete(key));
    }
  }
}
