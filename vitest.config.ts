import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const packages = fileURLToPath(new URL('./packages/', import.meta.url));

// Tests run against each package's TypeScript sources, never a stale dist/.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@parley\/([a-z]+)$/, replacement: `${packages}$1/src/index.ts` },
      { find: /^@parley\/([a-z]+)\/(.+)$/, replacement: `${packages}$1/src/$2.ts` },
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
