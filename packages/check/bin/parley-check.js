#!/usr/bin/env node
// parley-check: linearizability checking of recorded histories (see docs/checkers.md).
let cli;
try {
  cli = await import('../dist/cli.js');
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist')) throw err;
  process.stderr.write('parley-check: @parley/check is not built yet: run `npm run build` (or `npx tsc -b`) first\n');
  process.exit(2);
}
await cli.main();
