// Feature-flag rollout with a compare-and-swap loop: several writers on two nodes raise
// the rollout percentage of one flag at the same time with `doc(key).update` (read, apply,
// write with `ifVersion`, retried on conflict). No update is lost: the final value counts
// every one of them.
//
// Run after `npm ci`:  node examples/rollout-flags/rollout.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNode } from '@parley/node';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export async function run({ writersPerNode = 3, steps = 10, print = () => {} } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'parley-rollout-'));
  const a = await createNode({ dataDir: join(root, 'a'), logger: quiet });
  // A second node in the same cluster; strong calls are forwarded to the group's leader.
  const b = await createNode({
    dataDir: join(root, 'b'),
    psk: join(root, 'a', 'cluster.psk'),
    bootstrap: a.addresses,
    logger: quiet,
    raft: { voters: [a.peerId] },
  });
  try {
    let conflictsExhausted = 0;
    const writer = async (node, name) => {
      const flag = node.strong('flags').doc('checkout-v2');
      for (let i = 0; i < steps; i++) {
        for (;;) {
          try {
            const entry = await flag.update((c) => ({ ...c, pct: c.pct + 1, updates: c.updates + 1, lastBy: name }), {
              create: { pct: 0, updates: 0, lastBy: null },
            });
            print(`${name}: pct ${entry.value.pct}`);
            break;
          } catch (err) {
            // update() retries 10 times; under heavy contention try again from the top.
            if (err.code !== 'version_mismatch' && err.code !== 'key_already_exists') throw err;
            conflictsExhausted++;
          }
        }
      }
    };
    const writers = [];
    for (let w = 0; w < writersPerNode; w++) {
      writers.push(writer(a, `a${w}`), writer(b, `b${w}`));
    }
    await Promise.all(writers);
    const final = (await a.strong('flags').get('checkout-v2'))?.value;
    return { final, expected: 2 * writersPerNode * steps, conflictsExhausted };
  } finally {
    await b.close();
    await a.close();
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run({ print: (line) => console.log(line) });
  console.log(r);
}
