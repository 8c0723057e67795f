/**
 * One etcd member of the run (for `--backend etcd`): its own data dir, client
 * and peer ports, its own uid when partitions are on. Election timeout 1000 ms,
 * heartbeat 100 ms, fsync on (etcd's default), as Parley's own etcd harness runs it.
 * Status and leader come from etcd's JSON gateway (`POST /v3/maintenance/status`).
 */
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { call } from './http.js';
import type { Managed, ProcessTable } from './procs.js';

export interface EtcdSpec {
  /** `e1`, `e2`, … */
  readonly name: string;
  readonly slot: number;
  readonly dataDir: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly uid?: number;
}

export class EtcdMember {
  proc: Managed | undefined;
  /** etcd's member id (hex), known once it answered a status call. */
  memberId: string | undefined;
  private started = false;

  constructor(
    readonly spec: EtcdSpec,
    private readonly bin: string,
    private readonly initialCluster: string,
    private readonly token: string,
    private readonly procs: ProcessTable,
    private readonly runDir: string,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  get clientUrl(): string {
    return `http://127.0.0.1:${this.spec.clientPort}`;
  }

  get peerUrl(): string {
    return `http://127.0.0.1:${this.spec.peerPort}`;
  }

  get alive(): boolean {
    return this.proc?.alive === true;
  }

  get paused(): boolean {
    return this.proc?.stopped === true;
  }

  /** Starts the process (the first start forms the cluster, later ones rejoin from the data dir). */
  start(): void {
    if (this.alive) return;
    mkdirSync(this.spec.dataDir, { recursive: true, mode: 0o700 });
    if (this.spec.uid !== undefined) chownSync(this.spec.dataDir, this.spec.uid, this.spec.uid);
    const args = ['--name', this.name, '--data-dir', this.spec.dataDir];
    args.push('--listen-client-urls', this.clientUrl, '--advertise-client-urls', this.clientUrl);
    args.push('--listen-peer-urls', this.peerUrl, '--initial-advertise-peer-urls', this.peerUrl);
    args.push('--initial-cluster', this.initialCluster, '--initial-cluster-token', this.token);
    args.push('--initial-cluster-state', this.started ? 'existing' : 'new');
    args.push('--election-timeout', '1000', '--heartbeat-interval', '100', '--log-level', 'warn');
    this.started = true;
    this.proc = this.procs.spawn(this.name, this.bin, {
      args,
      ...(this.spec.uid === undefined ? {} : { uid: this.spec.uid, gid: this.spec.uid }),
      logFile: join(this.runDir, `${this.name}.log`),
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

  /** `{member, leader}` ids from this member, or undefined when it does not answer. */
  async status(timeoutMs = 1_500): Promise<{ member: string; leader: string } | undefined> {
    if (!this.alive || this.paused) return undefined;
    const o = await call(this.clientUrl, '/v3/maintenance/status', { method: 'POST', body: {}, timeoutMs });
    if (o.kind !== 'reply' || o.status !== 200) return undefined;
    const b = o.body as unknown as { header?: { member_id?: string }; leader?: string };
    if (b.header?.member_id === undefined || b.leader === undefined) return undefined;
    this.memberId = b.header.member_id;
    return { member: b.header.member_id, leader: b.leader };
  }
}
