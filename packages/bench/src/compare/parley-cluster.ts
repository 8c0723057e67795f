/**
 * Parley's side: three voter processes (@parley/node's PeerProcess: libp2p on
 * loopback, LevelDB with fsync, election timeout 1000 ms = 10 ticks of 100 ms,
 * heartbeat 100 ms) and the client, a fourth process embedding a non-voter
 * node (./parley-client.ts).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreatePrivateKey, loadOrCreatePsk, peerIdOf } from '@parley/net';
import { PeerProcess } from '@parley/node/testing';
import type { StrongTask, StrongTaskResult } from './workloads.js';

export const PARLEY_RAFT = { tickMs: 100, electionTimeoutTicks: 10, heartbeatTicks: 1, callTimeoutMs: 10_000 };

export class ParleyCluster {
  readonly voters: (PeerProcess | undefined)[] = [undefined, undefined, undefined];
  private client?: ChildProcess;
  private nextId = 1;
  private readonly waiting = new Map<number, (m: { ok: boolean; result?: StrongTaskResult; error?: string }) => void>();

  private constructor(
    private readonly dirs: string[],
    private readonly voterIds: string[],
    private readonly psk: string,
    private readonly lean: boolean,
  ) {}

  /** `lean: false` runs every Parley process without the lean channel (requests and Raft on libp2p streams). */
  static async start(root: string, lean = true): Promise<ParleyCluster> {
    const dirs = [0, 1, 2].map((i) => join(root, `parley${i}`));
    const voterIds = await Promise.all(
      dirs.map(async (d) => peerIdOf(await loadOrCreatePrivateKey(join(d, 'peer.key')))),
    );
    const psk = join(root, 'parley.psk');
    await loadOrCreatePsk(psk);
    const c = new ParleyCluster(dirs, voterIds, psk, lean);
    try {
      for (let i = 0; i < 3; i++) await c.startVoter(i);
      await c.startClient(join(root, 'parley-client'));
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  private live(): PeerProcess[] {
    return this.voters.filter((p): p is PeerProcess => p !== undefined && !p.exited);
  }

  /**
   * Starts voter `i`; a restart listens on the port it had (as etcd's members
   * do), so peers and the client reach it at the address they know.
   */
  async startVoter(i: number): Promise<void> {
    const port = this.voters[i]?.addresses.map((a) => /\/tcp\/(\d+)/.exec(a)?.[1]).find((p) => p !== undefined);
    this.voters[i] = await PeerProcess.start({
      dataDir: this.dirs[i] as string,
      listen: [`/ip4/127.0.0.1/tcp/${port ?? 0}`],
      bootstrap: this.live().flatMap((p) => p.addresses),
      psk: this.psk,
      lean: this.lean,
      raft: { ...PARLEY_RAFT, voters: this.voterIds },
    });
  }

  private async startClient(dataDir: string): Promise<void> {
    const program = fileURLToPath(new URL('./parley-client.js', import.meta.url));
    const config = {
      dataDir,
      bootstrap: this.live().flatMap((p) => p.addresses),
      psk: this.psk,
      lean: this.lean,
      raft: { ...PARLEY_RAFT, voters: this.voterIds },
    };
    const child = fork(program, [JSON.stringify(config)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.client = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('Parley client process did not start in time')), 30_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`Parley client process exited with ${code}`));
      });
      child.once('message', () => {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve();
      });
    });
    child.on('message', (m: { type: string; id: number; ok: boolean; result?: StrongTaskResult; error?: string }) => {
      if (m.type !== 'result') return;
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
    });
    child.on('exit', () => {
      for (const w of this.waiting.values()) w({ ok: false, error: 'Parley client process exited' });
      this.waiting.clear();
    });
  }

  /** OS process ids of the running voters. */
  voterPids(): number[] {
    return this.live().flatMap((p) => (p.child.pid === undefined ? [] : [p.child.pid]));
  }

  /** OS process ids of every running process of this side: the voters and the client node. */
  pids(): number[] {
    const client = this.client?.exitCode === null ? this.client.pid : undefined;
    return [...this.voterPids(), ...(client === undefined ? [] : [client])];
  }

  /** Runs a workload in the client process. */
  run(task: StrongTask, timeoutMs = 180_000): Promise<StrongTaskResult> {
    const client = this.client;
    if (!client || client.exitCode !== null) return Promise.reject(new Error('Parley client is not running'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`Parley task ${task.kind} timed out`));
      }, timeoutMs);
      this.waiting.set(id, (m) => {
        clearTimeout(timer);
        if (m.ok && m.result) resolve(m.result);
        else reject(new Error(m.error ?? 'Parley task failed'));
      });
      client.send({ type: 'run', id, task });
    });
  }

  /** Index of the voter that is leader (waits up to `timeoutMs`). */
  async leaderIndex(timeoutMs = 20_000): Promise<number> {
    const end = performance.now() + timeoutMs;
    while (performance.now() < end) {
      for (let i = 0; i < 3; i++) {
        const p = this.voters[i];
        if (!p || p.exited) continue;
        const st = await p.status().catch(() => undefined);
        if (st && st.leader === st.self) return i;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('Parley voters elected no leader in time');
  }

  async kill(i: number): Promise<void> {
    await this.voters[i]?.kill();
  }

  /** Freezes (SIGSTOP) or thaws (SIGCONT) voter `i`: its sockets stay open meanwhile. */
  signal(i: number, sig: 'SIGSTOP' | 'SIGCONT'): void {
    const pid = this.voters[i]?.child.pid;
    if (pid !== undefined) process.kill(pid, sig);
  }

  /**
   * Closes every process cleanly (so a `node --cpu-prof` run writes each
   * child's profile), killing what has not exited within 3 s.
   */
  async close(): Promise<void> {
    const client = this.client;
    if (client && client.exitCode === null && !client.signalCode) {
      const exited = new Promise<void>((r) => client.once('exit', () => r()));
      const timer = setTimeout(() => client.kill('SIGKILL'), 3_000);
      client.send({ type: 'close' });
      await exited;
      clearTimeout(timer);
    }
    await Promise.allSettled(this.voters.map((p) => p?.close(3_000)));
  }
}
