/**
 * Partitions on one host: every process of the run has a uid of its own, and
 * the run's iptables chain (hooked into OUTPUT) marks each TCP connection when
 * it opens with who dialled whom — the dialler's uid (`-m owner`) and the
 * port it dialled (a listening port of another process) — as a conntrack mark.
 * Loopback traffic crosses OUTPUT in both directions, so cutting the link
 * between a and b is one DROP rule per direction of dialling on those marks:
 * both sides' packets of every connection between them, existing and new,
 * are dropped, while their connections with everyone else (and the harness's
 * HTTP clients, which run as root and are never marked) go on.
 *
 * Expresses: any set of cut links between processes, symmetric (isolate a
 * node, cut one link, a bridge, a majority and a minority); a link between a
 * Parley node and an etcd member too. Cannot express: loss, delay,
 * reordering or duplication (that would need tc netem on fwmarks), a one-way
 * cut (TCP needs its acknowledgements, so dropping one direction stalls both
 * after retransmissions, at a time the kernel chooses), or cutting the
 * harness's own clients off a node (they are not marked).
 */
import { execFileSync } from 'node:child_process';
import { removeChain } from './cleanup.js';

/** One process as the firewall sees it: its uid and the ports it listens on for peers. */
export interface Endpoint {
  /** 0..15 within the run. */
  readonly slot: number;
  readonly uid: number;
  readonly ports: readonly number[];
}

const MAX_SLOTS = 16;

function ipt(args: readonly string[]): void {
  execFileSync('iptables', ['-w', '5', ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 15_000 });
}

/** True when iptables can be driven here (root, owner and connmark matches present). */
export function iptablesWorks(): string | undefined {
  const probe = `PTPROBE${process.pid}`;
  try {
    ipt(['-N', probe]);
    ipt([
      '-A',
      probe,
      '-p',
      'tcp',
      '-m',
      'owner',
      '--uid-owner',
      '0',
      '-m',
      'conntrack',
      '--ctstate',
      'NEW',
      '-j',
      'CONNMARK',
      '--set-mark',
      '1',
    ]);
    ipt(['-A', probe, '-m', 'connmark', '--mark', '1', '-j', 'RETURN']);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message.split('\n')[0] : String(err);
  } finally {
    removeChain(probe);
  }
}

export class Firewall {
  private readonly cuts = new Set<string>();

  private constructor(
    readonly chain: string,
    private readonly tag: number,
    private readonly endpoints: readonly Endpoint[],
  ) {}

  /** Creates the chain, its marking rules for every ordered pair, and hooks it into OUTPUT. */
  static create(chain: string, tag: number, endpoints: readonly Endpoint[]): Firewall {
    if (endpoints.some((e) => e.slot < 0 || e.slot >= MAX_SLOTS)) throw new RangeError(`slots are 0..${MAX_SLOTS - 1}`);
    const fw = new Firewall(chain, tag & 0xffff, endpoints);
    removeChain(chain);
    ipt(['-N', chain]);
    for (const from of endpoints) {
      for (const to of endpoints) {
        if (from === to) continue;
        for (const port of to.ports) {
          ipt([
            '-A',
            chain,
            '-p',
            'tcp',
            '-m',
            'owner',
            '--uid-owner',
            String(from.uid),
            '-m',
            'conntrack',
            '--ctstate',
            'NEW',
            '--dport',
            String(port),
            '-j',
            'CONNMARK',
            '--set-mark',
            String(fw.mark(from.slot, to.slot)),
          ]);
        }
      }
    }
    ipt(['-I', 'OUTPUT', '1', '-j', chain]);
    return fw;
  }

  /** The conntrack mark of connections dialled by slot `from` to slot `to`. */
  private mark(from: number, to: number): number {
    return ((this.tag << 8) | (from << 4) | to) >>> 0;
  }

  private dropRule(from: number, to: number): string[] {
    return ['-m', 'connmark', '--mark', String(this.mark(from, to)), '-j', 'DROP'];
  }

  /** Cuts the link between a and b (both directions of dialling). Idempotent. */
  cut(a: number, b: number): void {
    const key = a < b ? `${a}-${b}` : `${b}-${a}`;
    if (a === b || this.cuts.has(key)) return;
    ipt(['-A', this.chain, ...this.dropRule(a, b)]);
    ipt(['-A', this.chain, ...this.dropRule(b, a)]);
    this.cuts.add(key);
  }

  /** Cuts every link between a slot of `left` and a slot of `right`. */
  split(left: readonly number[], right: readonly number[]): void {
    for (const a of left) for (const b of right) this.cut(a, b);
  }

  /** Restores every link. */
  heal(): void {
    for (const key of this.cuts) {
      const [a, b] = key.split('-').map(Number) as [number, number];
      ipt(['-D', this.chain, ...this.dropRule(a, b)]);
      ipt(['-D', this.chain, ...this.dropRule(b, a)]);
    }
    this.cuts.clear();
  }

  /** The links cut now, as "a-b". */
  get cutLinks(): string[] {
    return [...this.cuts];
  }

  get slots(): number[] {
    return this.endpoints.map((e) => e.slot);
  }

  close(): void {
    removeChain(this.chain);
  }
}
