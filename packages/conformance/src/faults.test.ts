/**
 * Faults on real processes: clients call strong operations through Parley
 * nodes on etcd while etcd members are SIGKILLed and restarted; the recorded
 * histories must pass `parley-check` with the parley-entry, parley-lock and
 * parley-lease models. A planted bug (CAS without its version compare) must
 * make the checker fire. PARLEY_SEED replays the workload's choices (the
 * timing of a real cluster does not replay); PARLEY_FAULT_SECONDS=<n> runs
 * longer (default 10).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkLinearizability, getModel, type HistoryEvent, runCheckCli, toPorcupineLog } from '@parley/check';
import { etcdStrong } from '@parley/etcd';
import { testSeed, withSeed } from '@parley/interface';
import { createMemoryNetwork, silentLogger } from '@parley/net';
import { createNode } from '@parley/node';
import { MemoryKVStorage, MemoryRaftLogStorage } from '@parley/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { type EtcdStrongNodeOptions, etcdStrongNode, quietLogger, type StrongNode } from './backends.js';
import { etcdFixture } from './etcd-fixture.js';
import { type FaultModel, runFaultWorkload } from './faults.js';
import { dropVersionCompare } from './planted.js';

const etcd = etcdFixture('the fault test on etcd processes');
const SECONDS = Number(process.env.PARLEY_FAULT_SECONDS ?? 10);
const CLIENTS = 4;
/** Each model's history must hold at least this many ok calls to be worth checking. */
const MIN_OK_CALLS = 21;
const MODEL_NAMES: Record<FaultModel, string> = { entry: 'parley-entry', lock: 'parley-lock', lease: 'parley-lease' };

const nodes: StrongNode[] = [];
afterEach(async () => {
  await Promise.allSettled(nodes.splice(0).map((n) => n.close()));
});

let prefixes = 0;
/**
 * One Parley node per client, all on the same etcd prefix (one Parley cluster):
 * real nodes (`createNode({ strong: etcdStrong(…) })`), or with `wrap`, the same
 * strong faces over a wrapped backend (a planted bug).
 */
async function clients(wrap?: EtcdStrongNodeOptions['wrap']): Promise<StrongNode[]> {
  const prefix = `/faults-${process.pid}-${++prefixes}`;
  const endpoints = etcd.cluster().endpoints;
  const made: StrongNode[] = [];
  for (let i = 0; i < CLIENTS; i++) {
    const node: StrongNode = wrap
      ? etcdStrongNode({ endpoints, prefix, callTimeoutMs: 3_000, wrap })
      : await createNode({
          transport: createMemoryNetwork().createTransport({ logger: silentLogger }),
          storage: { kv: new MemoryKVStorage(), raftLog: new MemoryRaftLogStorage() },
          logger: quietLogger,
          strong: etcdStrong({ endpoints, prefix, callTimeoutMs: 3_000 }),
        });
    made.push(node);
    nodes.push(node);
  }
  return made;
}

/** `parley-check --model <model>` on the history, as a file in Porcupine's line format. */
async function parleyCheck(model: string, events: HistoryEvent[]): Promise<{ code: number; out: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'parley-faults-'));
  try {
    const file = join(dir, `${model}.log`);
    await writeFile(file, toPorcupineLog(events));
    let out = '';
    const code = await runCheckCli(['--model', model, '--timeout-ms', '30000', file], {
      stdout: (t) => {
        out += t;
      },
      stderr: (t) => {
        out += t;
      },
      readFile: (p) => import('node:fs/promises').then((fs) => fs.readFile(p)),
    });
    return { code, out };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!etcd.available)('faults on etcd processes', () => {
  it(`${CLIENTS} clients for ${SECONDS} s while members are killed and restarted: every history checks`, async () => {
    await withSeed(testSeed(1800), async (seed) => {
      const models: FaultModel[] = ['entry', 'lock', 'lease'];
      const report = await runFaultWorkload({
        seed,
        durationMs: SECONDS * 1000,
        minOkCalls: MIN_OK_CALLS,
        nodes: await clients(),
        models,
        cluster: etcd.cluster(),
      });
      expect(report.unexpected).toEqual([]);
      expect(report.kills).toBeGreaterThan(0);
      if (process.env.PARLEY_FAULT_STATS) {
        const ok = models.map((m) => `${m} ${report.histories[m].events().filter((e) => e.type === 'ok').length}`);
        console.log(
          `faults: ${report.calls} calls (ok: ${ok.join(', ')}), ${report.indeterminate} indeterminate, ${report.kills} kills, ${report.restartMs.join('/')} ms restarts`,
        );
      }
      for (const m of models) {
        const events = report.histories[m].events();
        expect(events.filter((e) => e.type === 'ok').length, `${m}: ok calls`).toBeGreaterThanOrEqual(MIN_OK_CALLS);
        const { code, out } = await parleyCheck(MODEL_NAMES[m], events);
        expect(out, `${m}: ${report.calls} calls, ${report.indeterminate} indeterminate`).toMatch(/: linearizable/);
        expect(code).toBe(0);
      }
    });
  }, 120_000);

  it('a planted CAS without its version compare makes the parley-entry checker fire', async () => {
    await withSeed(testSeed(1801), async (seed) => {
      const report = await runFaultWorkload({
        seed,
        durationMs: 3_000,
        nodes: await clients(dropVersionCompare),
        models: ['entry'],
      });
      const verdict = checkLinearizability(getModel('parley-entry')!, report.histories.entry.events(), {
        timeoutMs: 30_000,
      });
      expect(verdict.verdict).toBe('not linearizable');
      const { code, out } = await parleyCheck('parley-entry', report.histories.entry.events());
      expect(out).toMatch(/not linearizable/);
      expect(code).toBe(1);
    });
  }, 60_000);
});
