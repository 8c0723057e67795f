import { isParleyError, type Transport } from '@parley/interface';
import { expect, it } from 'vitest';
import { Simulation } from './index.js';

it('the README example runs as documented', async () => {
  const sim = new Simulation({ seed: 42, network: { lossRate: 0.05 } });
  sim.addHost('a', async (ctx) => {
    ctx.transport.handle('echo', (_from, bytes) => bytes);
    await ctx.transport.start();
  });
  const b = sim.addHost('b', async (ctx) => {
    await ctx.transport.start();
    return ctx.transport as Transport;
  });
  await sim.runFor(10);
  sim.network.partitionOneWay(['a'], ['b']);
  let outcome = '';
  b.app!.request('a', 'echo', new Uint8Array([1]), { timeoutMs: 500 }).then(
    () => (outcome = 'reply'),
    (err) => (outcome = isParleyError(err, 'timeout') ? 'timeout' : 'other'),
  );
  expect(await sim.runUntil(() => outcome !== '', 1_000)).toBe(true);
  expect(outcome).toBe('timeout');
  expect(sim.nowMs()).toBe(510);
  sim.network.heal();
  sim.host('a').crash();
  expect(sim.host('a').state).toBe('down');
  sim.host('a').restart();
  await sim.runFor(10);
  expect(sim.host('a').generation).toBe(1);
  expect(b.app!.peers()).toEqual(['a']);
});
