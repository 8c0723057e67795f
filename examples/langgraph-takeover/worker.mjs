// One worker process: a Parley node joined to the hub's strong namespace, a ParleySaver,
// and the graph. It takes single-writer ownership of the thread (waiting in the lock's
// queue while another worker owns it), then runs the graph on the thread — from the
// start, or from the last checkpoint if the thread has one. Every checkpoint it writes
// carries its fence: once another worker took the thread over, the store refuses them.
//
// Started by takeover.mjs: node worker.mjs <name> <dataDir> <config-json> [standby]
// A standby worker starts up, then waits for a line on stdin before it asks for the thread.
import { createInterface } from 'node:readline';
import { ParleySaver } from '@parley/langgraph';
import { createNode } from '@parley/node';
import { buildGraph } from './graph.mjs';

const [name, dataDir, configJson, standby] = process.argv.slice(2);
const { psk, bootstrap, voters, thread, ttl, steps, stepMs } = JSON.parse(configJson);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const say = (event) => process.stdout.write(`${JSON.stringify({ worker: name, ...event })}\n`);

const node = await createNode({ dataDir, psk, bootstrap, logger: quiet, raft: { voters } });
const saver = new ParleySaver({ node, namespace: 'agents' });
say({ event: 'ready' });
if (standby === 'standby') {
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once('line', resolve));
  lines.close();
}
const lease = await saver.ownThread(thread, { holder: name, ttl, wait: 60 });
const config = { configurable: { thread_id: thread } };
const resumed = (await saver.getTuple(config))?.checkpoint.id;
say({ event: 'owner', fence: lease.fence, resumed: resumed ?? null });
const graph = buildGraph({ worker: name, steps, stepMs, checkpointer: saver });
try {
  // null input: go on from the thread's last checkpoint. durability 'sync': each step's
  // checkpoint is written before the next step starts.
  const input = resumed ? null : { step: 0, log: [] };
  const options = { ...config, streamMode: 'values', durability: 'sync' };
  let first = true;
  for await (const state of await graph.stream(input, options)) {
    // Resuming, the first state is the checkpoint the thread had.
    say({ event: first && resumed ? 'resumed' : 'step', step: state.step, fence: lease.fence });
    first = false;
  }
  say({ event: 'done', fence: lease.fence });
  await lease.release();
} catch (err) {
  say({ event: 'refused', fence: lease.fence, code: err.code ?? 'error', message: String(err.message ?? err) });
}
await node.close();
