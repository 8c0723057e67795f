/**
 * Speed of the harness: `npm run bench:sim -- [--json FILE]`.
 *
 * - idle: a simulated minute of an idle 5-node cluster (3 voters) under
 *   `simulate`, against the anchor of the same five nodes on the bare
 *   `Simulation` (no fake timers, no recording, no driver) — the harness's
 *   own overhead;
 * - workload: the determinism workload (agents on every node calling strong
 *   entries, claims, a lease, a lock with fenced writes and an eventual
 *   counter every 50–450 ms, with a partition, a crash, skew, loss and a
 *   nemesis), in simulated seconds per real second.
 *
 * Rows are `{ name, unit, value, anchor, anchorValue, ratio }`.
 */
import { writeFileSync } from 'node:fs';
import { createNode, type NodeLogger } from '@parley/node';
import { Simulation } from '@parley/sim';
import { simulate } from '@parley/testing';

const silent: NodeLogger = { debug() {}, info() {}, warn() {}, error() {} };
const realMs = () => Number(process.hrtime.bigint()) / 1e6; // not faked by the harness

async function bareIdleMinute(seed: number): Promise<number> {
  const t0 = realMs();
  const sim = new Simulation({ seed });
  const ids = ['n0', 'n1', 'n2', 'n3', 'n4'];
  for (const id of ids) {
    sim.addHost(id, (ctx) =>
      createNode({
        transport: ctx.transport,
        storage: { kv: ctx.kv('node'), raftLog: ctx.raftLog('raft') },
        clock: ctx.clock,
        scheduler: ctx.scheduler,
        random: ctx.random,
        logger: silent,
        raft: { voters: ids.slice(0, 3), tickMs: 100, electionTimeoutTicks: 10, versionKey: 'parley-sim' },
        eventual: { antiEntropyMs: 1_000, requestTimeoutMs: 1_000 },
      }),
    );
  }
  await sim.runFor(60_000);
  return realMs() - t0;
}

async function harnessIdleMinute(seed: number): Promise<number> {
  const t0 = realMs();
  await simulate({ nodes: 5, voters: 3, seed }, async (cluster) => {
    await cluster.run('60s');
  });
  return realMs() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const runs = 3;
  const idle: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < runs; i++) {
    bare.push(await bareIdleMinute(100 + i));
    idle.push(await harnessIdleMinute(100 + i));
  }
  const fixture = new URL('../../testing/src/fixtures/workload.mjs', import.meta.url).href;
  const { workload } = (await import(fixture)) as {
    workload(seed: number): Promise<{ simulatedMs: number; steps: number; history: string }>;
  };
  const t0 = realMs();
  const w = await workload(7);
  const wReal = realMs() - t0;
  const calls = w.history.split('\n').length;
  const rows = [
    {
      name: 'idle 5-node cluster, 60 s simulated (median of 3)',
      unit: 'ms real',
      value: Math.round(median(idle)),
      anchor: 'same nodes on the bare Simulation',
      anchorValue: Math.round(median(bare)),
      ratio: Number((median(idle) / median(bare)).toFixed(2)),
    },
    {
      name: `workload, ${(w.simulatedMs / 1000).toFixed(1)} s simulated, ${calls} recorded calls, checks included`,
      unit: 'simulated s per real s',
      value: Number((w.simulatedMs / wReal).toFixed(2)),
      anchor: null,
      anchorValue: null,
      ratio: null,
    },
  ];
  for (const r of rows) {
    console.log(
      `${r.name}: ${r.value} ${r.unit}${r.anchor ? ` (anchor, ${r.anchor}: ${r.anchorValue}; ratio ${r.ratio})` : ''}`,
    );
  }
  const at = process.argv.indexOf('--json');
  if (at >= 0 && process.argv[at + 1])
    writeFileSync(process.argv[at + 1] as string, `${JSON.stringify(rows, null, 2)}\n`);
}

await main();
