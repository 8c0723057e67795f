/**
 * The parent-side harness shared by ./eventual-peers.ts and
 * ./strong-peers.ts: forks a compiled peer program, waits for its
 * 'ready' message, sends it tasks over IPC and matches the results, kills it
 * with SIGKILL or closes it cleanly. Used by the multi-process tests and the
 * benchmarks (not part of the package's API).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';

/** A task's result as the peer program sends it back. */
export interface PeerResultMessage {
  type: string;
  id: number;
  ok: boolean;
  error?: string;
  code?: string;
}

/**
 * Maps a source path of the peer program to its compiled copy (tests run from
 * src/, the program always from dist/); `dir` is its folder under src/.
 */
export function compiledPeerPath(sourcePath: string, dir: string): string {
  const path = sourcePath.replace(new RegExp(`[\\\\/]src[\\\\/]${dir}[\\\\/]`), `/dist/${dir}/`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npx tsc -b\` first`);
  return path;
}

/**
 * How long a forked peer may take to report it listens: a node process loads
 * libp2p, LevelDB and the engines, which takes 13–20 s on a 2-core machine at
 * load 20 (under 1 s when quiet).
 */
export const PEER_START_TIMEOUT_MS = 60_000;

/**
 * Forks `programPath` with `config` and resolves with `make(...)` once the
 * process reports it listens (rejects after `timeoutMs`).
 */
export function forkPeer<P>(
  programPath: string,
  config: unknown,
  timeoutMs: number,
  make: (child: ChildProcess, peerId: string, addresses: string[]) => P,
): Promise<P> {
  const child = fork(programPath, [JSON.stringify(config)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
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
      else resolve(make(child, msg.peerId, msg.addresses));
    });
  });
}

/** A running peer process: tasks go out over IPC, results come back by id. */
export abstract class PeerHarness<Config, Task extends { kind: string }> {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: unknown): void }>();
  exited = false;

  protected constructor(
    readonly child: ChildProcess,
    readonly peerId: string,
    readonly addresses: string[],
    readonly config: Config,
    failure: (msg: PeerResultMessage) => Error,
  ) {
    child.on('message', (msg: PeerResultMessage) => {
      if (msg.type !== 'result') return;
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.ok) w.resolve(msg as unknown as Record<string, unknown>);
      else w.reject(failure(msg));
    });
    child.on('exit', () => {
      this.exited = true;
      for (const w of this.waiting.values()) w.reject(new Error(`peer ${peerId} exited`));
      this.waiting.clear();
    });
  }

  /** Sends `task` and resolves with its result (rejects after `timeoutMs`). */
  protected runTask<T extends Record<string, unknown>>(task: Task, timeoutMs: number): Promise<T> {
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
