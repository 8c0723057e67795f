/**
 * A node as its own OS process, for the eventual multi-process test and the
 * gossip benchmark: `fork('dist/eventual/peer.js')` with the settings as one
 * JSON argument. The process starts `createNode` (libp2p on loopback, LevelDB
 * with fsync), opens its namespaces, reports `{type:'ready', peerId,
 * addresses}` over IPC and runs the tasks the parent sends
 * (`{type:'run', id, task}` → `{type:'result', id, ok, ...}`). The parent
 * kills it (SIGKILL for a crash) or sends `{type:'close'}`.
 */
import { createHash } from 'node:crypto';
import { encodeState } from '@parley/crdt';
import { createNode, internals } from '../node.js';

export interface EventualPeerConfig {
  dataDir: string;
  listen: string[];
  bootstrap: string[];
  psk?: string;
  namespaces: string[];
  /** Anti-entropy period; the node's default (5 s) when absent. */
  antiEntropyMs?: number;
}

export type EventualPeerTask =
  /** Sets `${prefix}${start..start+count-1}` and increments `counter` `increments` times. */
  | {
      kind: 'write';
      namespace: string;
      prefix: string;
      start: number;
      count: number;
      counter: string;
      increments: number;
    }
  /** SHA-256 of the namespace's encoded state, live keys and the counter's value. */
  | { kind: 'state'; namespace: string; counter: string }
  /** Anti-entropy and gossip figures since the process started. */
  | { kind: 'traffic'; namespace: string }
  /** Timestamps (performance.timeOrigin + now) at which watch events for keys with `prefix` arrived. */
  | { kind: 'watch'; namespace: string; prefix: string }
  | { kind: 'arrivals'; namespace: string; prefix: string }
  /** CPU time this process has used so far (user + system, ms): the benchmark's per-set cost. */
  | { kind: 'cpu' };

function send(msg: unknown): void {
  process.send?.(msg);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as EventualPeerConfig;
  const node = internals(
    await createNode({
      dataDir: config.dataDir,
      listen: config.listen,
      bootstrap: config.bootstrap,
      ...(config.psk ? { psk: config.psk } : {}),
      eventual: config.antiEntropyMs === undefined ? {} : { antiEntropyMs: config.antiEntropyMs },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    }),
  );
  const traffic = { aeBytes: 0, aeRounds: 0, repaired: 0, gossipIn: 0 };
  node.events.on('antientropy:round', (r) => {
    traffic.aeBytes += r.bytes;
    traffic.aeRounds++;
    traffic.repaired += r.repairedEntries;
  });
  node.events.on('gossip:bytes', (g) => {
    if (g.direction === 'in') traffic.gossipIn += g.bytes;
  });
  for (const ns of config.namespaces) await node.eventualModule.namespace(ns).ready;
  const arrivals = new Map<string, Map<string, number>>();
  send({ type: 'ready', peerId: node.peerId, addresses: node.addresses });

  const run = async (task: EventualPeerTask): Promise<Record<string, unknown>> => {
    if (task.kind === 'cpu') {
      const u = process.cpuUsage();
      return { cpuMs: (u.user + u.system) / 1000 };
    }
    const ns = node.eventual(task.namespace);
    switch (task.kind) {
      case 'write': {
        const writes: Promise<unknown>[] = [];
        for (let i = task.start; i < task.start + task.count; i++) writes.push(ns.set(`${task.prefix}${i}`, { i }));
        for (let i = 0; i < task.increments; i++) writes.push(ns.increment(task.counter, 1));
        await Promise.all(writes);
        return {};
      }
      case 'state': {
        const impl = node.eventualModule.namespace(task.namespace);
        const bytes = encodeState(impl.replica.state());
        return {
          hash: createHash('sha256').update(bytes).digest('hex'),
          stateBytes: bytes.length,
          keys: impl.replica.liveCount(Date.now()),
          counter: (await ns.get(task.counter))?.value ?? null,
        };
      }
      case 'traffic':
        return { ...traffic };
      case 'watch': {
        const seen = new Map<string, number>();
        arrivals.set(task.prefix, seen);
        ns.watch({ prefix: task.prefix }, (ch) => {
          if (!seen.has(ch.key)) seen.set(ch.key, performance.timeOrigin + performance.now());
        });
        return {};
      }
      case 'arrivals':
        return {
          arrivals: Object.fromEntries(arrivals.get(task.prefix) ?? []),
          stamps: Object.fromEntries(stamps),
        };
    }
  };

  const stamps = new Map<string, number>();
  process.on('message', (msg: { type: string; id?: number; task?: EventualPeerTask; key?: string }) => {
    if (msg.type === 'stamp' && msg.key !== undefined) {
      // The benchmark's anchor: the same stamped messages over IPC.
      stamps.set(msg.key, performance.timeOrigin + performance.now());
      return;
    }
    if (msg.type === 'close') {
      node.close().finally(() => process.exit(0));
      return;
    }
    if (msg.type !== 'run' || !msg.task) return;
    run(msg.task).then(
      (r) => send({ type: 'result', id: msg.id, ok: true, ...r }),
      (err) => send({ type: 'result', id: msg.id, ok: false, error: String(err) }),
    );
  });
}

main().catch((err) => {
  process.stderr.write(`eventual peer process failed: ${String(err)}\n`);
  process.exit(1);
});
