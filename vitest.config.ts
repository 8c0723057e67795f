import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const packages = fileURLToPath(new URL('./packages/', import.meta.url));

/**
 * Tests run against each package's TypeScript sources, never a stale dist/:
 * every subpath a package's export map names (`@parley/node`,
 * `@parley/node/testing`, …) resolves to the source file its `dist/` target
 * is compiled from, and nothing else resolves, as for a user of the package.
 */
function sourceAliases(): Array<{ find: string; replacement: string }> {
  const out: Array<{ find: string; replacement: string }> = [];
  for (const dir of readdirSync(packages)) {
    let manifest: { name?: string; exports?: Record<string, { import?: string }> };
    try {
      manifest = JSON.parse(readFileSync(`${packages}${dir}/package.json`, 'utf8'));
    } catch {
      continue;
    }
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      const file = target.import?.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts');
      if (!manifest.name || !file) continue;
      out.push({ find: `${manifest.name}${subpath.slice(1)}`, replacement: `${packages}${dir}/${file}` });
    }
  }
  // Longest first, so `@parley/node/testing` is not read as `@parley/node` + `/testing`.
  return out.sort((a, b) => b.find.length - a.find.length);
}

// The torture harness's short run drives real processes through timed faults (a paused leader,
// an 8 s whole-cluster outage, clock offsets) and judges TTLs against real time: it runs last,
// alone, so no other test file competes with its nodes for the two cores.
const alone = ['packages/torture/src/short.test.ts'];

export default defineConfig({
  resolve: {
    alias: sourceAliases().map(({ find, replacement }) => ({
      find: new RegExp(`^${find.replace(/[/.]/g, '\\$&')}$`),
      replacement,
    })),
  },
  test: {
    exclude: ['**/node_modules/**', '**/dist/**'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', ...alone],
          // Two files at a time: most long files wait on elections, timers and child processes,
          // so a second worker fills the idle core (vitest's default on two cores is one).
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: alone, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
