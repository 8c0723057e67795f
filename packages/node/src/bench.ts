/**
 * `npm run bench -w @parley/node` (`-- --json FILE` writes the rows): the
 * node's benchmarks. Strong side: ./strong/bench.ts (three voter processes on
 * loopback). Pass `--quick` for a short smoke run.
 */
import { Bench } from '@parley/bench';
import { DEFAULT_STRONG_BENCH, runStrongBench } from './strong/bench.js';

const quick = process.argv.includes('--quick');
const bench = new Bench('@parley/node');
await runStrongBench(
  bench,
  quick ? { writes: 50, casSeconds: 1, lockSeconds: 1, failoverTrials: 2 } : DEFAULT_STRONG_BENCH,
);
await bench.finish();
