/**
 * etcd members (three by default) on 127.0.0.1, each with its own data dir under `root`,
 * fsync on (etcd's default; --unsafe-no-fsync is not passed), election
 * timeout 1000 ms and heartbeat 100 ms, on free ports. Members can be killed
 * with SIGKILL and restarted on their data dir.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePort } from './ports.js';

/** What a test or benchmark that needs etcd prints when the binary is missing. */
export const ETCD_MISSING =
  'etcd was not found on PATH (Parley starts a 3-member etcd cluster on loopback for this).\n' +
  'Install it first, e.g. as root: apt-get install etcd-server  (Debian/Ubuntu; etcd 3.4 or later),\n' +
  'or pass --etcd /path/to/etcd.';

/** The etcd binary to run, or undefined when none answers `--version`. */
export function findEtcd(explicit?: string): string | undefined {
  const bin = explicit ?? 'etcd';
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 && /etcd Version/i.test(r.stdout) ? bin : undefined;
}

/** Deadline of one health or status probe. */
const PROBE_DEADLINE_MS = 2_000;
/** Pause between two health probes. */
const PROBE_INTERVAL_MS = 200;

/**
 * One call on a client made for it and closed after it: no circuit-breaker
 * or retry state outlives the call.
 */
async function probe<T>(
  hosts: string | string[],
  deadlineMs: number,
  call: (client: Etcd3, deadline: Date) => Promise<T>,
): Promise<T> {
  const client = new Etcd3({ hosts, dialTimeout: deadlineMs });
  try {
    return await call(client, new Date(Date.now() + deadlineMs));
  } finally {
    client.close();
  }
}

interface Member {
  name: string;
  dataDir: string;
  clientUrl: string;
  peerUrl: string;
  proc?: ChildProcess;
}

/** Options of `EtcdCluster.start`. */
export interface EtcdClusterOptions {
  /** Members (default 3). */
  members?: number;
  /** `--initial-cluster-token` (default 'parley'). */
  token?: string;
}

/** etcd members on loopback, started, killed (SIGKILL) and restarted by a test or benchmark. */
export class EtcdCluster {
  private constructor(
    private readonly bin: string,
    readonly members: Member[],
    private readonly initialCluster: string,
    private readonly token: string,
  ) {}

  /** Starts the members with data dirs under `root` and waits until a write succeeds. */
  static async start(bin: string, root: string, options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    const count = options.members ?? 3;
    const members: Member[] = [];
    for (let i = 0; i < count; i++) {
      members.push({
        name: `e${i}`,
        dataDir: join(root, `etcd${i}`),
        clientUrl: `http://127.0.0.1:${await freePort()}`,
        peerUrl: `http://127.0.0.1:${await freePort()}`,
      });
    }
    const initial = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    const c = new EtcdCluster(bin, members, initial, options.token ?? 'parley');
    for (let i = 0; i < count; i++) c.spawn(i);
    await c.waitHealthy(30_000);
    return c;
  }

  /** Client URLs of all members. */
  get endpoints(): string[] {
    return this.members.map((m) => m.clientUrl);
  }

  private spawn(i: number): void {
    const m = this.members[i] as Member;
    m.proc = spawn(
      this.bin,
      [
        '--name',
        m.name,
        '--data-dir',
        m.dataDir,
        '--listen-client-urls',
        m.clientUrl,
        '--advertise-client-urls',
        m.clientUrl,
        '--listen-peer-urls',
        m.peerUrl,
        '--initial-advertise-peer-urls',
        m.peerUrl,
        '--initial-cluster',
        this.initialCluster,
        '--initial-cluster-state',
        'new',
        '--initial-cluster-token',
        this.token,
        '--election-timeout',
        '1000',
        '--heartbeat-interval',
        '100',
        '--log-level',
        'error',
      ],
      { stdio: 'ignore' },
    );
  }

  /**
   * Resolves once a member reports a leader and a write through the cluster
   * commits. Each attempt is a fresh probe with its own gRPC deadline: one
   * long-lived client would carry the etcd3 client's circuit breaker from the
   * failures of the election into every later attempt, and fail them all at
   * once.
   */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const end = performance.now() + timeoutMs;
    let last: unknown = 'no attempt finished';
    for (;;) {
      const left = end - performance.now();
      if (left <= 0) throw new Error(`etcd did not become healthy within ${timeoutMs} ms: ${String(last)}`);
      try {
        if ((await this.leaderIndex()) < 0) throw new Error('no member reports itself leader');
        await probe(this.endpoints, Math.min(PROBE_DEADLINE_MS, left), (c, deadline) =>
          c.put('health').value('ok').options({ deadline }).exec(),
        );
        return;
      } catch (err) {
        last = err;
      }
      await new Promise((r) => setTimeout(r, Math.min(PROBE_INTERVAL_MS, Math.max(0, end - performance.now()))));
    }
  }

  /** Index of the member that is leader, or -1. */
  async leaderIndex(): Promise<number> {
    for (let i = 0; i < this.members.length; i++) {
      const m = this.members[i] as Member;
      if (!m.proc || m.proc.exitCode !== null || m.proc.signalCode) continue;
      try {
        const s = await probe(m.clientUrl, PROBE_DEADLINE_MS, (c, deadline) => c.maintenance.status({ deadline }));
        if (s.leader === s.header.member_id) return i;
      } catch {
        // not answering: not the leader we can use
      }
    }
    return -1;
  }

  /** SIGKILLs member i (no-op when it is not running). */
  async kill(i: number): Promise<void> {
    const p = this.members[i]?.proc;
    if (!p || p.exitCode !== null || p.signalCode) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGKILL');
    await exited;
  }

  /** Restarts member i on its data dir and waits until the cluster takes writes. */
  async restart(i: number): Promise<void> {
    this.spawn(i);
    await this.waitHealthy(30_000);
  }

  /** Kills every member (data dirs are the caller's to remove). */
  async close(): Promise<void> {
    await Promise.all(this.members.map((_, i) => this.kill(i)));
  }
}
