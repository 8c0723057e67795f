/**
 * The parent side of ./peer.ts: spawns eventual node processes on loopback,
 * sends them tasks, kills them with SIGKILL and restarts them on the same
 * data directory. Used by the multi-process test and the benchmark (not part
 * of the package's API).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EventualPeerConfig, EventualPeerTask } from './peer.js';

/** The compiled peer program (tests run from src/, the program always from dist/). */
export function eventualPeerPath(): string {
  const here = fileURLToPath(new URL('./peer.js', import.meta.url));
  const path = here.replace(/[\\/]src[\\/]eventual[\\/]/, '/dist/eventual/');
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npx tsc -b\` first`);
  return path;
}

export class EventualPeer {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: unknown): void }>();
  exited = false;

  private constructor(
    readonly child: ChildProcess,
    readonly peerId: string,
    readonly addresses: string[],
    readonly config: EventualPeerConfig,
  ) {
    child.on('message', (msg: { type: string; id: number; ok: boolean; error?: string }) => {
      if (msg.type !== 'result') return;
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.ok) w.resolve(msg as unknown as Record<string, unknown>);
      else w.reject(new Error(msg.error));
    });
    child.on('exit', () => {
      this.exited = true;
      for (const w of this.waiting.values()) w.reject(new Error(`peer ${peerId} exited`));
      this.waiting.clear();
    });
  }

  /** Starts a node process and resolves once it listens (rejects after `timeoutMs`). */
  static start(config: EventualPeerConfig, timeoutMs = 20_000): Promise<EventualPeer> {
    const child = fork(eventualPeerPath(), [JSON.stringify(config)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
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
        else resolve(new EventualPeer(child, msg.peerId, msg.addresses, config));
      });
    });
  }

  run<T extends Record<string, unknown>>(task: EventualPeerTask, timeoutMs = 60_000): Promise<T> {
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

  /** Sends a stamped message over IPC (the gossip benchmark's anchor). */
  stamp(key: string): void {
    if (!this.exited) this.child.send({ type: 'stamp', key });
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
