/**
 * Runs in a scratch copy with one planted bug (see smoke.ts): imports the
 * scratch copy's scenario module, runs seeds `first..first+budget−1` of one
 * scenario until a run fails, and prints the outcome as one line of JSON.
 *
 *     node <scratch>/packages/scenarios/dist/mutation/plant-worker.js <module> <scenario> <firstSeed> <budget>
 */
import { listScenarios, runScenario } from '../registry.js';

export interface PlantOutcome {
  /** Seeds run, the failing one included. */
  seedsRun: number;
  caught: boolean;
  seed?: number;
  kind?: string;
  /** The invariant or check that fired (`liveness` for a liveness failure). */
  checker?: string;
  message?: string;
}

/** The name of the invariant or check a failure message reports. */
export function checkerOf(kind: string, message: string): string {
  if (kind === 'liveness') return 'liveness';
  const m = /InvariantViolationError: ([a-z0-9-]+\/[a-z0-9-]+)/.exec(message);
  return m?.[1] ?? kind;
}

async function main(argv: readonly string[]): Promise<void> {
  const [module, name, first, budget] = argv;
  await import(`../families/${module}.js`);
  const scenario = listScenarios().find((s) => s.name === name);
  if (!scenario) throw new Error(`no scenario ${name} in module ${module}`);
  const firstSeed = Number(first);
  const out: PlantOutcome = { seedsRun: 0, caught: false };
  for (let i = 0; i < Number(budget); i++) {
    const r = await runScenario(scenario, firstSeed + i);
    out.seedsRun++;
    if (r.failure) {
      Object.assign(out, {
        caught: true,
        seed: r.seed,
        kind: r.failure.kind,
        checker: checkerOf(r.failure.kind, r.failure.message),
        message: r.failure.message,
      });
      break;
    }
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

if (process.argv[1]?.endsWith('plant-worker.js')) await main(process.argv.slice(2));
