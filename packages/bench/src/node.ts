/**
 * `npm run bench:node` (`-- --json FILE` writes the rows): the
 * node's benchmarks, each beside its anchor measured in the same run.
 * Eventual side: ./node-eventual.ts (node processes on loopback, LevelDB).
 * Strong side: ./node-strong.ts (three voter processes on loopback).
 * Pass `--quick` for a short smoke run, `--side eventual|strong` for one side.
 */
import { Bench } from './index.js';
import { runEventualBench } from './node-eventual.js';
import { DEFAULT_STRONG_BENCH, runStrongBench } from './node-strong.js';

const quick = process.argv.includes('--quick');
const sideAt = process.argv.indexOf('--side');
const side = sideAt >= 0 ? process.argv[sideAt + 1] : 'both';
const bench = new Bench('@parley/node');
if (side !== 'strong') await runEventualBench(bench);
if (side !== 'eventual') {
  await runStrongBench(
    bench,
    quick ? { writes: 50, casSeconds: 1, lockSeconds: 1, failoverTrials: 2 } : DEFAULT_STRONG_BENCH,
  );
}
await bench.finish();
