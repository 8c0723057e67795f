/**
 * The eventual side of `bench:compare`: local set/get rates and the
 * anti-entropy anchors measured in this process (./eventual.ts), and the
 * N-node propagation from @parley/node's benchmark program beside the same
 * workload on Yjs over y-protocols (./yjs-propagation.ts).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IDLE_TARGET_WINDOW } from '../index.js';
import { EARLY_GOSSIP_MODE } from '../node-eventual.js';
import { antiEntropyAnchors, localRates } from './eventual.js';
import { atLeast, atMost, type CompareRow, compareRow } from './rows.js';
import type { CompareRun } from './run.js';
import { quantile, spread } from './stats.js';
import { PROPAGATION_UPDATES, YJS_TOPOLOGY, yjsPropagation } from './yjs-propagation.js';

/** Everything of the eventual side: local rates, anti-entropy anchors, propagation with anti-entropy bytes. */
export async function eventualSide(run: CompareRun): Promise<void> {
  await localAndAntiEntropy(run);
  await propagation(run, true);
}

/** Local set/get rates and the anti-entropy anchors (Yjs, Automerge over TCP). */
async function localAndAntiEntropy(run: CompareRun): Promise<void> {
  await localSide(run);
  const ae = await antiEntropyAnchors(100_000);
  run.extra.anti_entropy_anchors = ae;
  run.progress.step('anti-entropy anchors (Yjs, Automerge over TCP)');
}

/** Local durable set, get and peek rates against Yjs and Automerge (each side warmed up first). */
export async function localSide(run: CompareRun): Promise<void> {
  const runs: Awaited<ReturnType<typeof localRates>>[] = [];
  for (let r = 0; r < run.opts.reps; r++) {
    runs.push(await localRates(Math.min(2_000, run.opts.seconds * 1000)));
    run.progress.step(`local set/get rep ${r + 1}`);
  }
  const of = (side: 'parley' | 'yjs' | 'automerge', f: 'set' | 'setCpuUs' | 'get' | 'peek') =>
    spread(runs.map((l) => l[side][f]));
  const yjsKv = 'Yjs Y.Map + LevelDB fsync per update';
  const amKv = 'Automerge map + LevelDB fsync per change';
  const setRow = 'local durable set ops/s, 1 writer, sequential';
  const cpuRow = 'local durable set CPU per op (process, user + system), 1 writer';
  const getRow = 'local get ops/s, 1 reader, await get() (anchors awaited the same way)';
  const peekRow = 'local get ops/s, 1 reader, peek() (synchronous)';
  run.rows.push(
    compareRow({
      name: setRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'set'),
      anchor: yjsKv,
      anchorValue: of('yjs', 'set'),
      target: atLeast(1, 'Yjs'),
    }),
    compareRow({
      name: setRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'set'),
      anchor: amKv,
      anchorValue: of('automerge', 'set'),
    }),
    compareRow({
      name: cpuRow,
      unit: 'µs',
      better: 'lower',
      value: of('parley', 'setCpuUs'),
      anchor: yjsKv,
      anchorValue: of('yjs', 'setCpuUs'),
    }),
    compareRow({
      name: getRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'get'),
      anchor: 'Yjs Y.Map.get',
      anchorValue: of('yjs', 'get'),
    }),
    compareRow({
      name: peekRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'peek'),
      anchor: 'Yjs Y.Map.get',
      anchorValue: of('yjs', 'peek'),
      target: atLeast(1, 'Yjs'),
    }),
    compareRow({
      name: peekRow,
      unit: 'ops/s',
      better: 'higher',
      value: of('parley', 'peek'),
      anchor: 'Automerge map read',
      anchorValue: of('automerge', 'peek'),
    }),
  );
}

/**
 * Parley's N-node propagation (and, with `withAntiEntropy`, its anti-entropy bytes) from
 * @parley/node's benchmark program, then the same workload on Yjs over y-protocols.
 */
export async function propagation(run: CompareRun, withAntiEntropy: boolean): Promise<void> {
  const ae = run.extra.anti_entropy_anchors as Awaited<ReturnType<typeof antiEntropyAnchors>> | undefined;

  const results = await nodeBench(run, withAntiEntropy ? 'gossip,ae' : 'gossip', []);
  run.progress.step(`Parley propagation (${run.opts.nodes} nodes) and anti-entropy (@parley/node bench)`);
  // The same propagation with the writer gossiping while its batch is written (opt-in).
  const early = await nodeBench(run, 'gossip', ['--gossip-before-durable']);
  run.progress.step(`Parley propagation (${run.opts.nodes} nodes), gossipBeforeDurable`);

  // The anchor of propagation: the same workload on Yjs over y-protocols, same node count.
  const y = await yjsPropagation(run.opts.nodes);
  run.extra.yjs_propagation = { nodes: y.nodes, links: y.edges, missing: y.missing, bytesOut: y.bytesOut };
  run.progress.step(`Yjs propagation over y-protocols (${run.opts.nodes} nodes)`);
  const yjsAnchor = `Yjs + y-protocols sync over TCP (${YJS_TOPOLOGY})`;
  for (const r of [...results, ...early]) {
    // The early run's rows carry their mode at the end of their names; the rows here keep it.
    const mode = r.name.endsWith(EARLY_GOSSIP_MODE) ? EARLY_GOSSIP_MODE : '';
    const q = r.name.startsWith('gossip set→watch p50') ? 0.5 : r.name.startsWith('gossip set→watch p99') ? 0.99 : 0;
    if (q > 0) {
      run.rows.push(
        compareRow({
          name: `propagation set→observe p${q * 100}, ${run.opts.nodes} nodes, 100 updates/s${mode}`,
          unit: 'ms',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([quantile(y.latenciesMs, q)]),
        }),
      );
    }
    if (r.name.startsWith('gossip CPU per delivery')) {
      run.rows.push(
        compareRow({
          name: `propagation CPU per delivery (receiving process, user + system), ${run.opts.nodes} nodes${mode}`,
          unit: 'ms',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([y.cpuPerDeliveryMs]),
        }),
      );
    }
    if (r.name.startsWith('idle cluster CPU per process')) {
      const window = y.idle.find((w) => r.name.endsWith(w.label));
      if (window === undefined) throw new Error(`no Yjs idle window for the row "${r.name}"`);
      run.rows.push(
        compareRow({
          name: `idle cluster CPU per process, ${run.opts.nodes} nodes, ${window.label}`,
          unit: 'ms/s',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([window.msPerSecond]),
          ...(window.label === IDLE_TARGET_WINDOW ? { target: atMost(5, 'ms/s') } : {}),
        }),
      );
    }
    if (r.name.startsWith('gossip deliveries missing')) {
      run.rows.push(
        compareRow({
          name: `propagation deliveries missing 2 s after the last set (of ${PROPAGATION_UPDATES * (run.opts.nodes - 1)})${mode}`,
          unit: 'count',
          better: 'lower',
          value: spread([r.value]),
          anchor: yjsAnchor,
          anchorValue: spread([y.missing]),
        }),
      );
    }
  }
  for (const r of [...results, ...early]) {
    run.rows.push({ ...r, name: `${r.name} [@parley/node bench]`, better: r.unit.includes('/s') ? 'higher' : 'lower' });
    if (ae && r.name.startsWith('anti-entropy bytes, 1%')) {
      const anchors: Array<[string, number]> = [
        ['Yjs state-vector sync over TCP', ae.yjs.bytes],
        ['Automerge sync protocol over TCP', ae.automerge.bytes],
      ];
      for (const [anchor, bytes] of anchors) {
        run.rows.push(
          compareRow({
            name: 'anti-entropy bytes, 1% of 100,000 keys changed',
            unit: 'B',
            better: 'lower',
            value: spread([r.value]),
            anchor,
            anchorValue: spread([bytes]),
          }),
        );
      }
    }
  }
}

/**
 * Runs @parley/node's eventual benchmark program (`--only` the given parts, with `extra`
 * arguments) on the run's node count and returns its rows; one more try if it fails.
 */
async function nodeBench(run: CompareRun, only: string, extra: readonly string[]): Promise<CompareRow[]> {
  const json = join(run.root, `eventual${extra.join('')}.json`);
  const program = join(run.repoRoot, 'packages', 'bench', 'dist', 'node.js');
  const args = [program, '--side', 'eventual', '--json', json, '--peers', String(run.opts.nodes - 1), '--only', only];
  const once = () =>
    new Promise<number | null>((resolveExit, reject) => {
      const child = spawn(process.execPath, [...args, ...extra], { stdio: ['ignore', 'ignore', 'inherit'] });
      child.once('error', reject);
      child.once('exit', resolveExit);
    });
  let code = await once();
  if (code !== 0) {
    // On a loaded machine one of the 19 node processes may miss its start bound: one more try.
    process.stderr.write(`\n@parley/node's eventual benchmark exited with ${code}; running it once more\n`);
    code = await once();
  }
  if (code !== 0) throw new Error(`@parley/node's eventual benchmark exited with ${code}`);
  return JSON.parse(readFileSync(json, 'utf8')) as CompareRow[];
}
