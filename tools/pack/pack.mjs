#!/usr/bin/env node
// `npm run pack [-- DIR]`: every public package of the built tree as a tarball in DIR (default
// ./packs; @parley/langgraph in DIR/extras), each checked by tools/pack/check.mjs, and the line
// that installs them in another project (README, "Use it in your project").
import { rmSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { problemsOf } from './check.mjs';
import { packAll, ROOT, workspacePackages } from './packages.mjs';

const out = resolve(process.argv[2] ?? resolve(ROOT, 'packs'));
rmSync(out, { recursive: true, force: true });
const reports = packAll(out);
const problems = reports.flatMap((r) => problemsOf(r, workspacePackages()));
for (const r of reports) console.log(`${relative(process.cwd(), r.tarball)}  ${(r.size / 1024).toFixed(0)} KiB`);
if (problems.length > 0) {
  console.error(`\n${problems.length} packaging problem(s):\n${problems.join('\n')}`);
  process.exitCode = 1;
} else {
  console.log(`\nIn your project: npm install ${out}/*.tgz`);
}
