// Shared settings of the on-demand mutation-testing program (Stryker) over the
// pure engine packages. Each `<pkg>.config.mjs` here is one package's Stryker
// config; `mutate.mjs` is the launcher behind `npm run mutate -- <pkg>`.
// See docs/simulation.md, "Mutation testing (Stryker)".

/** The packages the program covers. */
export const PACKAGES = ['crdt', 'raft', 'coord'];

/**
 * Source files that are not shipped engine code: tests, benchmarks and the
 * helpers that drive the engine from tests and the simulator.
 */
const NOT_MUTATED = {
  crdt: [],
  raft: ['testkit.ts'],
  coord: ['harness.ts'],
};

/**
 * The Stryker config of one package. It runs from the repository root, runs
 * only that package's vitest tests and mutates only its shipped src/ files. Vite compiles the
 * TypeScript of each mutated file when a test imports it, so there is no build
 * step per mutant.
 *
 * @param {string} pkg one of PACKAGES
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function strykerConfig(pkg) {
  if (!PACKAGES.includes(pkg)) throw new Error(`no mutation config for package ${pkg}`);
  const src = `packages/${pkg}/src`;
  return {
    testRunner: 'vitest',
    plugins: ['@stryker-mutator/vitest-runner'],
    vitest: { configFile: `tools/stryker/${pkg}.vitest.config.mjs`, related: true },
    coverageAnalysis: 'perTest',
    mutate: [`${src}/**/*.ts`, `!${src}/**/*.test.ts`, ...NOT_MUTATED[pkg].map((file) => `!${src}/${file}`)],
    // The sandbox is a copy of the repository (a few MB) without build
    // output and docs; vite follows tsconfig references, so every package's
    // tsconfig.json must be there.
    ignorePatterns: ['dist', '/docs', '/examples', '/simulations'],
    // Two workers on the 2-core machine; the launcher runs them under `nice -n 19`.
    concurrency: 2,
    // A mutant's time limit is 2 × its tests' time in the dry run + 8 s: the
    // machine is shared and its load swings, and a false timeout would count
    // as a kill.
    timeoutFactor: 2,
    timeoutMS: 8000,
    dryRunTimeoutMinutes: 10,
    // Everything Stryker writes lives under the root dist/ (gitignored, and
    // skipped by Biome, tsc and vitest): sandboxes, reports and the
    // incremental file, which is a local cache (it goes stale as src changes,
    // and Stryker re-tests what changed), not a committed artifact.
    incremental: true,
    incrementalFile: `dist/mutation/${pkg}-incremental.json`,
    tempDirName: `dist/stryker-tmp/${pkg}`,
    cleanTempDir: 'always',
    reporters: ['clear-text', 'progress', 'html', 'json'],
    htmlReporter: { fileName: `dist/mutation/${pkg}.html` },
    jsonReporter: { fileName: `dist/mutation/${pkg}.json` },
    allowConsoleColors: false,
    clearTextReporter: { reportTests: false, reportMutants: false, reportScoreTable: true },
    thresholds: { high: 80, low: 60, break: null },
  };
}

/**
 * The vitest config of one package's mutation run: the root config (aliases
 * to sources, setup file, timeouts) with only that package's tests included,
 * so a mutant of @parley/crdt never runs the node's or the CLI's tests.
 *
 * @param {{ test?: object }} root the root vitest config
 * @param {string} pkg one of PACKAGES
 */
export function vitestConfig(root, pkg) {
  if (!PACKAGES.includes(pkg)) throw new Error(`no mutation config for package ${pkg}`);
  return {
    ...root,
    test: {
      ...root.test,
      include: [`packages/${pkg}/src/**/*.test.ts`, `packages/${pkg}/test/**/*.test.ts`],
    },
  };
}
