/**
 * @parley/sim — the deterministic world Parley protocols run in (the history
 * checkers are @parley/check, the scenario runner @parley/scenarios).
 *
 * One seed drives everything: virtual time, per-host clocks, the network
 * (latency, loss, duplication, reordering, partitions, held links), disks
 * (crash loses what was not synced, torn tails, read errors) and process
 * faults (crash, restart, pause, clock jump). A failure names the seed that
 * replays it: `PARLEY_SEED=<n>`.
 *
 * @example
 * ```ts
 * import { Simulation } from '@parley/sim';
 * const sim = new Simulation({ seed: 42 });
 * sim.addHost('a', async (ctx) => {
 *   ctx.transport.handle('echo', (_from, bytes) => bytes);
 *   await ctx.transport.start();
 * });
 * const b = sim.addHost('b', async (ctx) => {
 *   await ctx.transport.start();
 *   return ctx.transport;
 * });
 * await sim.runFor(10);
 * sim.network.partition(['a'], ['b']);           // or partitionOneWay, isolate, bridge, hold/release
 * sim.host('a').crash();                         // and restart(), pause()/resume(), jumpClock(ms)
 * const reply = b.app!.request('a', 'echo', new Uint8Array([1]), { timeoutMs: 500 });
 * await sim.runFor(1_000);                       // virtual time: returns at once
 * ```
 */
export { type ClockSpec, HostClock, type PeriodicDrift } from './clock.js';
export { between, chance } from './kernel.js';
export { Nemesis, type NemesisOptions, type NemesisStats, PARTITION_KINDS, type PartitionKind } from './nemesis.js';
export {
  CALM_NETWORK,
  type LatencyModel,
  MAX_HELD_PER_LINK,
  type NetworkFaults,
  SimNetwork,
} from './network.js';
export {
  type Boot,
  type FailureKind,
  type HostContext,
  type HostOptions,
  type HostState,
  MAX_DEFERRED_PER_HOST,
  SimHost,
  Simulation,
  SimulationFailure,
  type SimulationOptions,
  violation,
} from './simulation.js';
export {
  compareKeys,
  DEFAULT_DISK_FAULTS,
  type DiskFaults,
  type KVStoreOptions,
  SimDisk,
  SimKVStorage,
  SimRaftLogStorage,
} from './storage.js';
export { SimTransport } from './transport.js';
