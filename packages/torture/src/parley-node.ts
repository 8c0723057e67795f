/**
 * One `parley serve` process of the run (the built packages/cli bin), with its
 * own data dir, HTTP port and peer-to-peer port (fixed across restarts), its own
 * uid when partitions are on, its own clock file when clock offsets are on, and
 * its data dir on a tmpfs of its own when disk faults are on.
 */
import { chmodSync, chownSync, copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeClock } from './clock.js';
import { mountTmpfs } from './disk.js';
import { call } from './http.js';
import type { Managed, ProcessTable } from './procs.js';

export const START_TIMEOUT_MS = 180_000;

export interface NodeSpec {
  /** `n1`, `n2`, … */
  readonly name: string;
  /** Index among the run's processes (the firewall's slot). */
  readonly slot: number;
  readonly role: 'voter' | 'nonvoter';
  readonly dataDir: string;
  readonly httpPort: number;
  readonly p2pPort: number;
  /** The lean channel's port (requests, Raft): fixed, so the firewall cuts it with the libp2p port. */
  readonly leanPort: number;
  /** Set when partitions are on (each node under a uid of its own). */
  readonly uid?: number;
}

export interface NodeCommon {
  readonly cliBin: string;
  readonly runDir: string;
  readonly procs: ProcessTable;
  /** etcd client URLs (etcd backend). */
  readonly etcd?: { readonly endpoints: readonly string[]; readonly prefix: string };
}

export class ParleyNode {
  proc: Managed | undefined;
  peerId = '';
  /** When the current process became ready (performance.now of the harness), for availability. */
  readyAt = 0;
  private bootstrap: string[] = [];
  private voters = '';

  constructor(
    readonly spec: NodeSpec,
    private readonly common: NodeCommon,
    readonly clock: NodeClock | undefined,
    readonly tmpfsMb: number | undefined,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  get url(): string {
    return `http://127.0.0.1:${this.spec.httpPort}`;
  }

  get p2pAddr(): string {
    return `/ip4/127.0.0.1/tcp/${this.spec.p2pPort}`;
  }

  get alive(): boolean {
    return this.proc?.alive === true;
  }

  get paused(): boolean {
    return this.proc?.stopped === true;
  }

  /** Mints the identity, copies the cluster key in, and hands the dir to the node's uid. */
  async prepare(psk: string): Promise<void> {
    const { loadOrCreatePrivateKey, peerIdOf } = await import('@parley/net');
    mkdirSync(this.spec.dataDir, { recursive: true, mode: 0o700 });
    const uid = this.spec.uid;
    if (this.tmpfsMb !== undefined && !mountTmpfs(this.spec.dataDir, this.tmpfsMb, uid ?? 0, uid ?? 0)) {
      throw new Error(`${this.name}: could not mount a tmpfs on ${this.spec.dataDir}`);
    }
    if (this.tmpfsMb !== undefined) this.common.procs.addMount(this.spec.dataDir);
    this.peerId = peerIdOf(await loadOrCreatePrivateKey(join(this.spec.dataDir, 'peer.key')));
    copyFileSync(psk, join(this.spec.dataDir, 'cluster.psk'));
    if (uid !== undefined) chownTree(this.spec.dataDir, uid);
  }

  /** The other nodes to dial, and the voters' peer ids (built-in backend), once every identity is minted. */
  setPeers(others: readonly ParleyNode[], voters: string): void {
    this.bootstrap = others.filter((o) => o !== this).map((o) => `${o.p2pAddr}/p2p/${o.peerId}`);
    this.voters = voters;
  }

  private args(): string[] {
    const a = [this.common.cliBin, '--output', 'json', 'serve', '--data-dir', this.spec.dataDir];
    a.push('--port', String(this.spec.httpPort), '--listen', this.p2pAddr, '--lean-port', String(this.spec.leanPort));
    for (const b of this.bootstrap) a.push('--bootstrap', b);
    if (this.common.etcd !== undefined) {
      a.push('--etcd', this.common.etcd.endpoints.join(','), '--etcd-prefix', this.common.etcd.prefix);
    } else {
      a.push('--voters', this.voters);
    }
    return a;
  }

  /** Starts the process and resolves once it prints its ready line (rejects if it exits first). */
  start(): Promise<void> {
    if (this.alive) return Promise.resolve();
    const env: NodeJS.ProcessEnv = { ...process.env, ...(this.clock?.env() ?? {}) };
    delete env.PARLEY_API_TOKEN;
    return new Promise((resolve, reject) => {
      let ready = false;
      const proc = this.common.procs.spawn(this.name, process.execPath, {
        args: this.args(),
        env,
        ...(this.spec.uid === undefined ? {} : { uid: this.spec.uid, gid: this.spec.uid }),
        logFile: join(this.common.runDir, `${this.name}.log`),
        onLine: (line) => {
          if (ready) return;
          ready = true;
          clearTimeout(timer);
          try {
            JSON.parse(line);
            this.readyAt = performance.now();
            resolve();
          } catch {
            reject(new Error(`${this.name} printed an unexpected first line: ${line.slice(0, 200)}`));
          }
        },
      });
      this.proc = proc;
      const timer = setTimeout(() => {
        if (!ready) reject(new Error(`${this.name} was not ready within ${START_TIMEOUT_MS} ms`));
      }, START_TIMEOUT_MS);
      void proc.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        if (!ready)
          reject(new Error(`${this.name} exited (${signal ?? code}) before it was ready; see ${this.name}.log`));
      });
    });
  }

  async kill(): Promise<void> {
    await this.proc?.kill();
  }

  pause(): void {
    this.proc?.signal('SIGSTOP');
  }

  resume(): void {
    this.proc?.signal('SIGCONT');
  }

  /** The Raft view this node reports (`/api/v1/status`), or null when it does not answer. */
  async raft(timeoutMs = 5_000): Promise<{ leader: string | null; commitIndex: number; appliedIndex: number } | null> {
    if (!this.alive || this.paused) return null;
    const o = await call(this.url, '/api/v1/status', { method: 'GET', timeoutMs });
    if (o.kind !== 'reply' || o.status !== 200) return null;
    type Status = { cluster?: { leader?: string | null; commitIndex?: number; appliedIndex?: number } | null };
    const c = (o.body.data as Status | undefined)?.cluster;
    if (c === undefined || c === null) return null;
    return { leader: c.leader ?? null, commitIndex: c.commitIndex ?? 0, appliedIndex: c.appliedIndex ?? 0 };
  }

  /** The leader this node reports (a peer id, `etcd:<name>` on etcd), or null. */
  async leader(timeoutMs = 5_000): Promise<string | null> {
    return (await this.raft(timeoutMs))?.leader ?? null;
  }
}

function chownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  chmodSync(dir, 0o700);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) chownTree(p, uid);
    else chownSync(p, uid, uid);
  }
}
