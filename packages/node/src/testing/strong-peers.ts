/**
 * The parent side of ./peer-process.ts: spawns node processes on loopback,
 * asks them to run workloads, kills them with SIGKILL and restarts them on
 * the same data directory. Used by the multi-process test and the strong
 * benchmarks (not part of the package's API). The shared harness is
 * ../peer-harness.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ErrorCode, ParleyError } from '@parley/interface';
import type { ClusterStatus } from '../api.js';
import { compiledPeerPath, forkPeer, PEER_START_TIMEOUT_MS, PeerHarness } from './peer-harness.js';
import type { PeerProcessConfig, PeerTask } from './strong-peer.js';

/** The compiled peer program (tests run from src/, the program always from dist/). */
export function peerProgramPath(): string {
  return compiledPeerPath(fileURLToPath(new URL('./strong-peer.js', import.meta.url)), 'testing');
}

export class PeerProcess extends PeerHarness<PeerProcessConfig, PeerTask> {
  private constructor(child: ChildProcess, peerId: string, addresses: string[], config: PeerProcessConfig) {
    super(child, peerId, addresses, config, (msg) =>
      msg.code ? new ParleyError(msg.code as ErrorCode, msg.error ?? '') : new Error(msg.error),
    );
  }

  /** Starts a node process and resolves once it listens (rejects after `timeoutMs`). */
  static start(config: PeerProcessConfig, timeoutMs = PEER_START_TIMEOUT_MS): Promise<PeerProcess> {
    return forkPeer(
      peerProgramPath(),
      config,
      timeoutMs,
      (child, peerId, addresses) => new PeerProcess(child, peerId, addresses, config),
    );
  }

  run<T extends Record<string, unknown>>(task: PeerTask, timeoutMs = 120_000): Promise<T> {
    return this.runTask<T>(task, timeoutMs);
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
}
