/**
 * The simulated network between hosts: every message is an event on the
 * simulation's queue, delayed by a latency drawn from the seed, possibly
 * lost, duplicated or reordered, and subject to partitions and held links.
 *
 * A link is directed (`a → b`). Partitions block links; a blocked link drops
 * what is sent on it and what is still in flight on it when it arrives. A
 * held (clogged) link keeps messages until released, then delivers them in
 * order. Two hosts are *connected* (they appear in `Transport.peers()` and
 * get `peer:connect`/`peer:disconnect`) while both are running and at least
 * one direction between them is open: a one-way partition leaves the
 * connection up, so a request can reach its handler while the reply is lost.
 */
import type { PeerId, Random } from '@parley/interface';
import { between, chance, type SimKernel } from './kernel.js';

export interface LatencyModel {
  minMs: number;
  /** Most messages take between `minMs` and `2·meanMs − minMs`. */
  meanMs: number;
  /** A tail of 5% of messages takes between `meanMs` and `maxMs`. */
  maxMs: number;
}

export interface NetworkFaults {
  latency: LatencyModel;
  /** Probability that one message is dropped. */
  lossRate: number;
  /** Probability that one message is delivered twice. */
  duplicateRate: number;
  /** False: each directed link delivers in send order (FIFO). True: latency alone decides. */
  reorder: boolean;
}

export const CALM_NETWORK: NetworkFaults = {
  latency: { minMs: 1, meanMs: 3, maxMs: 20 },
  lossRate: 0,
  duplicateRate: 0,
  reorder: false,
};

/** Messages a held link buffers before it drops more (a full socket buffer). */
export const MAX_HELD_PER_LINK = 10_000;

/** What the network needs to know of a host. */
export interface NetEndpoint {
  readonly id: PeerId;
  /** The host runs and its current transport is started. */
  reachable(): boolean;
  /** Runs `fn` as this host: deferred while paused, dropped if the host crashed meanwhile. */
  deliver(label: string, fn: () => void): void;
  /** Connection changes, delivered through `deliver` after `delayMs` (default 0). */
  connectionChanged(peer: PeerId, connected: boolean, delayMs?: number): void;
}

interface Held {
  from: PeerId;
  to: PeerId;
  label: string;
  fn: () => void;
}

const link = (a: PeerId, b: PeerId): string => `${a}>${b}`;
const pair = (a: PeerId, b: PeerId): string => (a < b ? `${a}|${b}` : `${b}|${a}`);

export class SimNetwork {
  private faults: NetworkFaults = CALM_NETWORK;
  private readonly endpoints = new Map<PeerId, NetEndpoint>();
  private readonly blocked = new Set<string>();
  private readonly held = new Map<string, Held[]>();
  private readonly lastArrivalMs = new Map<string, number>();
  /** Per directed link, the latest arrival time of a message sent on it (whatever the reordering). */
  private readonly latestArrivalMs = new Map<string, number>();
  /** Per directed link `a>b`, when `b` is told of the last change of its connection to `a`. */
  private readonly noticeAtMs = new Map<string, number>();
  private connected = new Set<string>();
  private readonly counters = { sent: 0, delivered: 0, dropped: 0, duplicated: 0 };

  constructor(
    private readonly kernel: SimKernel,
    private readonly rng: Random,
  ) {}

  /** Current fault settings (latency, loss, duplication, reordering). */
  get settings(): NetworkFaults {
    return this.faults;
  }

  /** Replaces the fault settings; partitions and holds are separate. */
  configure(faults: Partial<NetworkFaults>): void {
    this.faults = { ...this.faults, ...faults };
    this.kernel.trace(
      `net configure loss=${this.faults.lossRate} dup=${this.faults.duplicateRate} reorder=${this.faults.reorder}`,
    );
  }

  stats(): Readonly<{ sent: number; delivered: number; dropped: number; duplicated: number }> {
    return { ...this.counters };
  }

  /** @internal */
  attach(ep: NetEndpoint): void {
    this.endpoints.set(ep.id, ep);
  }

  hosts(): PeerId[] {
    return [...this.endpoints.keys()].sort();
  }

  // --- partitions ---------------------------------------------------------

  /** Blocks `from → to` (one way). */
  blockLink(from: PeerId, to: PeerId): void {
    this.blocked.add(link(from, to));
    this.kernel.trace(`net block ${from}>${to}`);
    this.refresh();
  }

  unblockLink(from: PeerId, to: PeerId): void {
    this.blocked.delete(link(from, to));
    this.kernel.trace(`net unblock ${from}>${to}`);
    this.refresh();
  }

  /**
   * Symmetric partition: hosts in different groups cannot talk. Hosts not
   * named form one more group of their own.
   */
  partition(...groups: PeerId[][]): void {
    const named = new Set(groups.flat());
    const rest = this.hosts().filter((h) => !named.has(h));
    const all = rest.length > 0 ? [...groups, rest] : groups;
    const groupOf = new Map<PeerId, number>();
    for (const [i, g] of all.entries()) for (const h of g) groupOf.set(h, i);
    for (const a of this.hosts())
      for (const b of this.hosts()) if (a !== b && groupOf.get(a) !== groupOf.get(b)) this.blocked.add(link(a, b));
    this.kernel.trace(`net partition ${all.map((g) => [...g].sort().join(',')).join(' | ')}`);
    this.refresh();
  }

  /** Asymmetric partition: messages from any of `from` to any of `to` are lost; the reverse flows. */
  partitionOneWay(from: PeerId[], to: PeerId[]): void {
    for (const a of from) for (const b of to) if (a !== b) this.blocked.add(link(a, b));
    this.kernel.trace(`net one-way ${[...from].sort().join(',')} -/-> ${[...to].sort().join(',')}`);
    this.refresh();
  }

  /** Cuts one host off from every other. */
  isolate(host: PeerId): void {
    this.partition([host]);
  }

  /** Bridge: `a` and `c` cannot talk; both still talk to `bridge` (and everyone else). */
  bridge(a: PeerId, bridge: PeerId, c: PeerId): void {
    if (a === bridge || c === bridge || a === c) throw new RangeError('bridge needs three distinct hosts');
    this.blocked.add(link(a, c));
    this.blocked.add(link(c, a));
    this.kernel.trace(`net bridge ${a}-${bridge}-${c}`);
    this.refresh();
  }

  /** Whether `from → to` is open (not blocked by a partition). */
  canSend(from: PeerId, to: PeerId): boolean {
    return !this.blocked.has(link(from, to));
  }

  /** Removes every partition and releases every held link. */
  heal(): void {
    this.blocked.clear();
    for (const key of [...this.held.keys()]) this.releaseKey(key);
    this.kernel.trace('net heal');
    this.refresh();
  }

  // --- holds --------------------------------------------------------------

  /** Holds messages between `a` and `b` (both directions) until `release`. */
  hold(a: PeerId, b: PeerId): void {
    for (const k of [link(a, b), link(b, a)]) if (!this.held.has(k)) this.held.set(k, []);
    this.kernel.trace(`net hold ${a}|${b}`);
  }

  /** Delivers what `hold` kept, in send order, each after a fresh latency. */
  release(a: PeerId, b: PeerId): void {
    this.releaseKey(link(a, b));
    this.releaseKey(link(b, a));
    this.kernel.trace(`net release ${a}|${b}`);
  }

  /** Holds a link for `durationMs`, then releases it. */
  clog(a: PeerId, b: PeerId, durationMs: number): void {
    this.hold(a, b);
    this.kernel.schedule(durationMs, 'net-unclog', () => this.release(a, b));
  }

  isHeld(a: PeerId, b: PeerId): boolean {
    return this.held.has(link(a, b));
  }

  // --- delivery -----------------------------------------------------------

  /** Whether `a` and `b` hold a live connection now. */
  isConnected(a: PeerId, b: PeerId): boolean {
    return this.connected.has(pair(a, b));
  }

  /** Peers connected to `host`, sorted. */
  peersOf(host: PeerId): PeerId[] {
    const out: PeerId[] = [];
    for (const id of this.endpoints.keys()) if (id !== host && this.connected.has(pair(host, id))) out.push(id);
    return out.sort();
  }

  /**
   * Sends one message; `fn` runs at the receiver when (and if) it arrives.
   * Returns false when the message was dropped at once (blocked or lost).
   */
  send(from: PeerId, to: PeerId, label: string, fn: () => void): boolean {
    this.counters.sent++;
    const key = link(from, to);
    if (this.blocked.has(key)) return this.drop(from, to, label, 'blocked');
    if (chance(this.rng, this.faults.lossRate)) return this.drop(from, to, label, 'lost');
    const held = this.held.get(key);
    if (held) {
      if (held.length >= MAX_HELD_PER_LINK) return this.drop(from, to, label, 'overflow');
      held.push({ from, to, label, fn });
      return true;
    }
    this.dispatch(from, to, label, fn);
    if (chance(this.rng, this.faults.duplicateRate)) {
      this.counters.duplicated++;
      this.kernel.trace(`net dup ${label} ${from}>${to}`);
      this.dispatch(from, to, label, fn);
    }
    return true;
  }

  /**
   * Recomputes which pairs are connected and tells both ends of every change.
   * Hosts call it when they start, stop, crash or restart.
   */
  refresh(): void {
    const next = new Set<string>();
    const ids = this.hosts();
    for (let i = 0; i < ids.length; i++) {
      for (let j = i + 1; j < ids.length; j++) {
        const a = ids[i]!;
        const b = ids[j]!;
        const ea = this.endpoints.get(a)!;
        const eb = this.endpoints.get(b)!;
        if (!ea.reachable() || !eb.reachable()) continue;
        if (this.blocked.has(link(a, b)) && this.blocked.has(link(b, a))) continue;
        next.add(pair(a, b));
      }
    }
    const prev = this.connected;
    this.connected = next;
    for (const p of [...prev].sort()) if (!next.has(p)) this.announce(p, false);
    for (const p of [...next].sort()) if (!prev.has(p)) this.announce(p, true);
  }

  private announce(p: string, up: boolean): void {
    const [a, b] = p.split('|') as [PeerId, PeerId];
    this.kernel.trace(`net ${up ? 'connect' : 'disconnect'} ${a}|${b}`);
    this.endpoints.get(a)?.connectionChanged(b, up, this.noticeDelayMs(b, a, up));
    this.endpoints.get(b)?.connectionChanged(a, up, this.noticeDelayMs(a, b, up));
  }

  /**
   * When `to` hears that its connection to `from` changed. As over TCP, a peer
   * that went down (crashed, stopped) closes its connection behind what it had
   * already sent: the close reaches `to` after the last message in flight from
   * it. Notices of one link keep their order.
   */
  private noticeDelayMs(from: PeerId, to: PeerId, up: boolean): number {
    const now = this.kernel.nowMs();
    const key = link(from, to);
    let at = Math.max(now, this.noticeAtMs.get(key) ?? now);
    if (!up && !this.endpoints.get(from)?.reachable()) at = Math.max(at, this.latestArrivalMs.get(key) ?? now);
    this.noticeAtMs.set(key, at);
    return at - now;
  }

  private drop(from: PeerId, to: PeerId, label: string, why: string): false {
    this.counters.dropped++;
    this.kernel.trace(`net drop ${label} ${from}>${to} ${why}`);
    return false;
  }

  private sampleLatencyMs(): number {
    const { minMs, meanMs, maxMs } = this.faults.latency;
    if (this.rng.int(100) < 95) return between(this.rng, minMs, Math.max(minMs, 2 * meanMs - minMs));
    return between(this.rng, meanMs, Math.max(meanMs, maxMs));
  }

  private dispatch(from: PeerId, to: PeerId, label: string, fn: () => void): void {
    const key = link(from, to);
    let atMs = this.kernel.nowMs() + this.sampleLatencyMs();
    if (!this.faults.reorder) {
      atMs = Math.max(atMs, this.lastArrivalMs.get(key) ?? 0);
      this.lastArrivalMs.set(key, atMs);
    }
    this.latestArrivalMs.set(key, Math.max(atMs, this.latestArrivalMs.get(key) ?? 0));
    this.kernel.schedule(atMs - this.kernel.nowMs(), 'net', () => {
      if (this.blocked.has(key)) {
        this.drop(from, to, label, 'blocked-in-flight');
        return;
      }
      const ep = this.endpoints.get(to);
      if (!ep?.reachable()) {
        this.drop(from, to, label, 'down');
        return;
      }
      this.counters.delivered++;
      ep.deliver(label, fn);
    });
  }

  private releaseKey(key: string): void {
    const held = this.held.get(key);
    if (!held) return;
    this.held.delete(key);
    for (const m of held) this.dispatch(m.from, m.to, m.label, m.fn);
  }
}
