/**
 * The Parley client: an embedded node in its own OS process (how a Parley
 * user calls the strong API), a non-voter that forwards to the Raft leader of
 * the three voter processes. Forked by ./parley-cluster.ts with its settings
 * as one JSON argument; runs ./workloads.ts tasks over IPC.
 */
import { isParleyError } from '@parley/interface';
import type { StrongOptions } from '@parley/node';
import { createNode } from '@parley/node';
import { runStrongTask, type StrongAdapter, type StrongTask } from './workloads.js';

interface ClientConfig {
  dataDir: string;
  bootstrap: string[];
  psk: string;
  raft: StrongOptions;
  lean: boolean;
}

const config = JSON.parse(process.argv[2] ?? '{}') as ClientConfig;
const node = await createNode({
  dataDir: config.dataDir,
  listen: ['/ip4/127.0.0.1/tcp/0'],
  bootstrap: config.bootstrap,
  psk: config.psk,
  lean: config.lean,
  raft: config.raft,
  logger: { debug() {}, info() {}, warn() {}, error() {} },
});
/**
 * One namespace per task (`bench-<prefix>`): claims create a fresh key per
 * operation, and a namespace holds at most 10,000 live keys by default (etcd
 * has no such limit), so each task starts with a namespace of its own.
 */
function adapterFor(prefix: string): StrongAdapter {
  const name = `bench-${prefix.replace(/[^A-Za-z0-9._-]/g, '_')}`;
  const ns = node.strong(name);
  const locks = node.locks(name);
  return {
    async put(key, value) {
      await ns.set(key, value);
    },
    async version(key) {
      const e = await ns.get(key);
      if (e) return e.version;
      // Initialisation only (a plain value entry, as etcd's put): CAS then runs on it.
      return (await ns.set(key, '0')).version;
    },
    async cas(key, value, version) {
      try {
        return { won: true, version: (await ns.set(key, value, { ifVersion: version })).version };
      } catch (err) {
        const actual = isParleyError(err, 'version_mismatch') ? err.details.actual : undefined;
        if (typeof actual === 'string') return { won: false, version: actual };
        throw err;
      }
    },
    async claim(key, value) {
      try {
        return (await ns.claim(key, value)).won;
      } catch (err) {
        if (isParleyError(err, 'key_already_exists')) return false;
        throw err;
      }
    },
    async lockCycle(key, owner, contended, pipelined) {
      // Contenders wait in the lock's FIFO queue (Parley's blocking acquire).
      const grant = await locks.acquire(key, { owner, ttl: 10, ...(contended ? { wait: 30 } : {}) });
      const released = locks.release(key, { owner, fence: grant.fence, pipelined });
      if (pipelined) return { released };
      await released;
      return undefined;
    },
  };
}

process.send?.({ type: 'ready' });
process.on('message', (msg: { type: string; id?: number; task?: StrongTask }) => {
  if (msg.type === 'close') {
    node.close().finally(() => process.exit(0));
    return;
  }
  if (msg.type !== 'run' || !msg.task) return;
  runStrongTask(adapterFor(msg.task.prefix), msg.task).then(
    (result) => process.send?.({ type: 'result', id: msg.id, ok: true, result }),
    (err) => process.send?.({ type: 'result', id: msg.id, ok: false, error: String(err) }),
  );
});
