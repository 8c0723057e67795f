/**
 * The parent side of ./peer.ts: spawns eventual node processes on loopback,
 * sends them tasks, kills them with SIGKILL and restarts them on the same
 * data directory. Used by the multi-process test and the benchmark (not part
 * of the package's API). The shared harness is ../peer-harness.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { EventualPeerConfig, EventualPeerTask } from './eventual-peer.js';
import { compiledPeerPath, forkPeer, PEER_START_TIMEOUT_MS, PeerHarness } from './peer-harness.js';

/** The compiled peer program (tests run from src/, the program always from dist/). */
export function eventualPeerPath(): string {
  return compiledPeerPath(fileURLToPath(new URL('./eventual-peer.js', import.meta.url)), 'testing');
}

export class EventualPeer extends PeerHarness<EventualPeerConfig, EventualPeerTask> {
  private constructor(child: ChildProcess, peerId: string, addresses: string[], config: EventualPeerConfig) {
    super(child, peerId, addresses, config, (msg) => new Error(msg.error));
  }

  /** Starts a node process and resolves once it listens (rejects after `timeoutMs`). */
  static start(config: EventualPeerConfig, timeoutMs = PEER_START_TIMEOUT_MS): Promise<EventualPeer> {
    return forkPeer(
      eventualPeerPath(),
      config,
      timeoutMs,
      (child, peerId, addresses) => new EventualPeer(child, peerId, addresses, config),
    );
  }

  run<T extends Record<string, unknown>>(task: EventualPeerTask, timeoutMs = 60_000): Promise<T> {
    return this.runTask<T>(task, timeoutMs);
  }

  /** Sends a stamped message over IPC (the gossip benchmark's anchor). */
  stamp(key: string): void {
    if (!this.exited) this.child.send({ type: 'stamp', key });
  }
}
