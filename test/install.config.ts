import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * `npm run test:install`: the proof that Parley installs as a dependency (test/install.proof.ts).
 * Not in `npm test`: npm's install of ~350 packages takes a minute or two here, so CI runs it as a
 * step of its own (`.ci/run`), after `npm test` has built the tree.
 */
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['test/install.proof.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
});
