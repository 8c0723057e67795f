/**
 * Test support (not exported from the package index): a Parley node of one
 * voter on the in-memory transport and memory storage, with real timers and a
 * short Raft tick.
 */
import { createMemoryNetwork, silentLogger } from '@parley/net';
import { createNode, type NodeOptions } from '@parley/node';
import { internals, type ParleyNodeInternals } from '@parley/node/testing';
import { openMemoryKV, openMemoryRaftLog } from '@parley/storage';

export const quiet = { debug() {}, info() {}, warn() {}, error() {} };

let n = 0;

export async function memoryNode(options: Partial<NodeOptions> = {}): Promise<ParleyNodeInternals> {
  const network = createMemoryNetwork();
  const kv = await openMemoryKV();
  const raftLog = await openMemoryRaftLog();
  const node = internals(
    await createNode({
      transport: network.createTransport({ peerId: `lg-${++n}`, logger: silentLogger }),
      storage: { kv, raftLog },
      logger: quiet,
      ...options,
      raft: { tickMs: 10, electionTimeoutTicks: 10, ...options.raft },
    }),
  );
  const close = node.close.bind(node);
  node.close = async () => {
    await close();
    await kv.close();
    await raftLog.close();
  };
  return node;
}
