/**
 * The parent side of ./peer-process.ts: spawns node processes on loopback,
 * asks them to run workloads, kills them with SIGKILL and restarts them on
 * the same data directory. Used by the multi-process test and the strong
 * benchmarks (not part of the package's API).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ErrorCode, ParleyError } from '@parley/interface';
import type { ClusterStatus } from '../api.js';
import type { PeerProcessConfig, PeerTask } from './peer-process.js';

/** The compiled peer program (tests run from src/, the program always from dist/). */
export function peerProgramPath(): string {
  const here = fileURLToPath(new URL('./peer-process.js', import.meta.url));
  const path = here.replace(/[\\/]src[\\/]strong[\\/]/, '/dist/strong/');
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npx tsc -b\` first`);
  return path;
}

export class PeerProcess {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: unknown): void }>();
  exited = false;

  private constructor(
    readonly child: ChildProcess,
    readonly peerId: string,
    readonly addresses: string[],
    readonly config: PeerProcessConfig,
  ) {
    child.on('message', (msg: { type: string; id: number; ok: boolean; error?: string; code?: ErrorCode }) => {
      if (msg.type !== 'result') return;
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.ok) w.resolve(msg as unknown as Record<string, unknown>);
      else w.reject(msg.code ? new ParleyError(msg.code, msg.error ?? '') : new Error(msg.error));
    });
    child.on('exit', () => {
      this.exited = true;
      for (const w of this.waiting.values()) w.reject(new Error(`peer ${peerId} exited`));
      this.waiting.clear();
    });
  }

  /** Starts a node process and resolves once it listens (rejects after `timeoutMs`). */
  static start(config: PeerProcessConfig, timeoutMs = 20_000): Promise<PeerProcess> {
    const child = fork(peerProgramPath(), [JSON.stringify(config)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error('peer process did not start in time'));
      }, timeoutMs);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`peer process exited with ${code} before it was ready`));
      });
      child.once('message', (msg: { type: string; peerId: string; addresses: string[] }) => {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        if (msg.type !== 'ready') reject(new Error(`unexpected first message ${msg.type}`));
        else resolve(new PeerProcess(child, msg.peerId, msg.addresses, config));
      });
    });
  }

  run<T extends Record<string, unknown>>(task: PeerTask, timeoutMs = 120_000): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`peer ${this.peerId} is not running`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`task ${task.kind} timed out`));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.send({ type: 'run', id, task });
    });
  }

  /** One public API call through this process's node (see PeerTask 'call'); rejects with the call's typed error. */
  async call<T = unknown>(
    api: 'strong' | 'locks' | 'lease',
    namespace: string,
    method: string,
    args: unknown[],
    leaseId?: number,
  ): Promise<T> {
    const r = await this.run<{ value: T }>(
      { kind: 'call', api, namespace, method, args, ...(leaseId ? { leaseId } : {}) },
      60_000,
    );
    return r.value;
  }

  async status(): Promise<ClusterStatus> {
    return (await this.run<{ status: ClusterStatus }>({ kind: 'status' }, 10_000)).status;
  }

  /** kill -9: the process dies at once; its disk keeps what was fsynced. */
  async kill(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGKILL');
    await exited;
  }

  /** Closes the node cleanly, or kills it after `timeoutMs`. */
  async close(timeoutMs = 5_000): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.send({ type: 'close' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }
}
