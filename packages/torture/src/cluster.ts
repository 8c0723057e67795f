/**
 * The system under test: `parley serve` nodes (voters and non-voters on the
 * built-in Raft group, or nodes on an etcd cluster of the run), their ports,
 * uids, clocks and data dirs, and the questions nemeses ask of it (who leads,
 * which processes a fault may hit).
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@parley/etcd/testing';
import { NodeClock } from './clock.js';
import { EtcdMember } from './etcd-member.js';
import { call } from './http.js';
import { ParleyNode } from './parley-node.js';
import type { Endpoint } from './partition.js';
import type { ProcessTable } from './procs.js';

export type Backend = 'raft' | 'etcd';

export interface ClusterConfig {
  readonly runDir: string;
  readonly procs: ProcessTable;
  readonly cliBin: string;
  readonly backend: Backend;
  /** Voters (raft) or etcd members (etcd). */
  readonly servers: number;
  /** Parley nodes outside the Raft group (raft), or Parley nodes on the etcd cluster (etcd). */
  readonly gateways: number;
  /** libfaketime's library when clock offsets are on. */
  readonly faketimeLib?: string;
  /** A tmpfs per Parley node's data dir of this many MiB when disk faults are on. */
  readonly tmpfsMb?: number;
  /** The first uid of the run's processes when partitions are on. */
  readonly uidBase?: number;
  readonly etcdBin?: string;
}

/** A process a fault can hit: a Parley node or an etcd member. */
export type Target = ParleyNode | EtcdMember;

export class Cluster {
  readonly nodes: ParleyNode[] = [];
  readonly etcd: EtcdMember[] = [];

  private constructor(readonly config: ClusterConfig) {}

  static async create(config: ClusterConfig): Promise<Cluster> {
    const c = new Cluster(config);
    chmodSync(config.runDir, 0o755);
    const uid = (slot: number) => (config.uidBase === undefined ? {} : { uid: config.uidBase + slot });
    let slot = 0;
    if (config.backend === 'etcd') {
      const specs = [];
      for (let i = 0; i < config.servers; i++) {
        specs.push({
          name: `e${i + 1}`,
          slot: slot++,
          dataDir: join(config.runDir, `e${i + 1}`),
          clientPort: await freePort(),
          peerPort: await freePort(),
          ...uid(slot - 1),
        });
      }
      const initial = specs.map((s) => `${s.name}=http://127.0.0.1:${s.peerPort}`).join(',');
      const token = `torture-${process.pid}-${Date.now()}`;
      for (const s of specs) {
        c.etcd.push(new EtcdMember(s, config.etcdBin ?? 'etcd', initial, token, config.procs, config.runDir));
      }
    }
    const parleyCount = config.backend === 'raft' ? config.servers + config.gateways : Math.max(1, config.gateways);
    const common = {
      cliBin: config.cliBin,
      runDir: config.runDir,
      procs: config.procs,
      ...(config.backend === 'etcd'
        ? { etcd: { endpoints: c.etcd.map((e) => e.clientUrl), prefix: `/torture-${process.pid}` } }
        : {}),
    };
    const nodes: ParleyNode[] = [];
    for (let i = 0; i < parleyCount; i++) {
      const name = `n${i + 1}`;
      const role = config.backend === 'raft' && i >= config.servers ? 'nonvoter' : 'voter';
      const clock =
        config.faketimeLib === undefined
          ? undefined
          : new NodeClock(join(config.runDir, `${name}.clock`), config.faketimeLib);
      const spec = {
        name,
        slot: slot++,
        role,
        dataDir: join(config.runDir, name),
        httpPort: await freePort(),
        p2pPort: await freePort(),
        leanPort: await freePort(),
        ...uid(slot - 1),
      } as const;
      nodes.push(new ParleyNode(spec, common, clock, config.tmpfsMb));
    }
    const psk = join(config.runDir, 'cluster.psk');
    const { loadOrCreatePsk } = await import('@parley/net');
    await loadOrCreatePsk(psk);
    for (const n of nodes) await n.prepare(psk);
    const voters = nodes
      .filter((n) => n.spec.role === 'voter')
      .map((n) => n.peerId)
      .join(',');
    for (const n of nodes) n.setPeers(nodes, voters);
    c.nodes.push(...nodes);
    mkdirSync(join(config.runDir, 'histories'), { recursive: true });
    return c;
  }

  /** The firewall's view: every process with its uid and the ports others dial. */
  endpoints(): Endpoint[] {
    const base = this.config.uidBase;
    if (base === undefined) return [];
    return [
      ...this.etcd.map((e) => ({
        slot: e.spec.slot,
        uid: base + e.spec.slot,
        ports: [e.spec.peerPort, e.spec.clientPort],
      })),
      ...this.nodes.map((n) => ({
        slot: n.spec.slot,
        uid: base + n.spec.slot,
        ports: [n.spec.p2pPort, n.spec.leanPort],
      })),
    ];
  }

  /** The processes that hold the strong state: Raft voters, or etcd members. */
  get servers(): Target[] {
    return this.config.backend === 'etcd' ? this.etcd : this.nodes.filter((n) => n.spec.role === 'voter');
  }

  /** Every Parley node (clients call these). */
  get gateways(): ParleyNode[] {
    return this.nodes;
  }

  all(): Target[] {
    return [...this.etcd, ...this.nodes];
  }

  byName(name: string): Target {
    const t = this.all().find((x) => x.name === name);
    if (t === undefined) throw new Error(`no process ${name}`);
    return t;
  }

  /** Starts every process and waits until a strong write succeeds through every node. */
  async start(timeoutMs = 90_000): Promise<void> {
    for (const e of this.etcd) e.start();
    await Promise.all(this.nodes.map((n) => n.start()));
    await this.waitHealthy(timeoutMs);
  }

  /** Resolves once every live, running Parley node completes a strong write (throws after `timeoutMs`). */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const end = performance.now() + timeoutMs;
    const pending = new Set(this.nodes.filter((n) => n.alive && !n.paused));
    let last = '';
    while (pending.size > 0) {
      if (performance.now() > end) throw new Error(`cluster not healthy within ${timeoutMs} ms: ${last}`);
      for (const n of [...pending]) {
        const o = await call(n.url, `/api/v1/distributed-state/torture-health/${n.name}`, {
          method: 'POST',
          body: { value: Date.now(), ttl_seconds: 60 },
          timeoutMs: 5_000,
        });
        if (o.kind === 'reply' && o.status < 300) pending.delete(n);
        else last = `${n.name}: ${o.kind === 'reply' ? `${o.status} ${o.body.error}` : o.error}`;
      }
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** The server that leads now (a voter or an etcd member), or undefined when none is known. */
  async leader(): Promise<Target | undefined> {
    if (this.config.backend === 'etcd') {
      for (const e of this.etcd) {
        const s = await e.status();
        if (s !== undefined && s.leader === s.member) return e;
      }
      return undefined;
    }
    const votes = new Map<string, number>();
    for (const n of this.nodes) {
      const l = await n.leader();
      if (l !== null) votes.set(l, (votes.get(l) ?? 0) + 1);
    }
    let best: string | undefined;
    for (const [id, count] of votes) if (best === undefined || count > (votes.get(best) ?? 0)) best = id;
    return this.nodes.find((n) => n.peerId === best && n.alive && !n.paused);
  }

  /** Kills every process (by PID). */
  async stop(): Promise<void> {
    await Promise.all(this.all().map((t) => t.kill()));
  }
}
