/**
 * `node packages/scenarios/dist/fingerprints.js [--scenario <globs>] [--seeds N] [--seed S]`:
 * one line per scenario and seed with what a fixed-seed run gives — the trace
 * fingerprint, simulated ms, steps, the failure kind (or `pass`) and a hash of
 * the metrics — so a refactor that must leave simulated behaviour alone can be
 * checked by running this before and after and comparing the output with `diff`.
 */
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import './families/index.js';
import { matchScenarios, runScenario } from './registry.js';

/** One line: `<scenario> <seed> <fingerprint> <simulatedMs> <steps> <pass|kind> <metrics hash>`. */
export async function fingerprintLine(name: string, seed: number): Promise<string> {
  const [scenario] = matchScenarios(name);
  if (!scenario || scenario.name !== name) throw new RangeError(`no scenario '${name}'`);
  const r = await runScenario(scenario, seed);
  const metrics = createHash('sha256')
    .update(JSON.stringify(Object.entries(r.metrics).sort(([a], [b]) => (a < b ? -1 : 1))))
    .digest('hex')
    .slice(0, 12);
  return [name, seed, r.fingerprint, r.simulatedMs, r.steps, r.failure?.kind ?? 'pass', metrics].join(' ');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', default: '*' },
      seeds: { type: 'string', default: '2' },
      seed: { type: 'string', default: '1' },
    },
  });
  const first = Number(values.seed);
  const count = Number(values.seeds);
  for (const s of matchScenarios(values.scenario)) {
    for (let seed = first; seed < first + count; seed++)
      process.stdout.write(`${await fingerprintLine(s.name, seed)}\n`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
