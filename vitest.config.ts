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

export default defineConfig({
  resolve: {
    alias: sourceAliases().map(({ find, replacement }) => ({
      find: new RegExp(`^${find.replace(/[/.]/g, '\\$&')}$`),
      replacement,
    })),
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
