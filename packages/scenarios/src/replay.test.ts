/**
 * A seed replays exactly in a fresh process: what a failure's PARLEY_SEED line
 * promises. Two child processes run the same node-eventual seed (the real node,
 * with Yjs documents) and must print the same trace fingerprint. Any entropy
 * from outside the simulation (a platform-random Yjs client id, a module read
 * that takes real time between simulated steps) makes them differ.
 * Subprocess test: it runs the compiled packages (`npx tsc -b` first).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));

const program = `
const { matchScenarios, runScenario } = await import(${JSON.stringify(`${dist}registry.js`)});
await import(${JSON.stringify(`${dist}families/index.js`)});
const [s] = matchScenarios('node-eventual-chaos');
const r = await runScenario(s, 1);
console.log(JSON.stringify({ fingerprint: r.fingerprint, steps: r.steps }));
`;

async function freshRun(): Promise<{ fingerprint: string; steps: number }> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', program], {
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) as string);
}

it('node-eventual-chaos seed 1 gives one fingerprint in two fresh processes', { timeout: 150_000 }, async () => {
  const [a, b] = await Promise.all([freshRun(), freshRun()]);
  expect(a.steps).toBeGreaterThan(0);
  expect(b).toEqual(a);
});
