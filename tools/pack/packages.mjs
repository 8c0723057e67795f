// The public packages of this workspace and how they are packed: one `npm pack` for all of them,
// and the rules every tarball keeps (tools/pack/check.mjs). Used by `npm run pack` and its tests.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Public packages that `npm install <packs>/*.tgz` leaves out, each with why: they go to
 * `<packs>/extras/`. @parley/langgraph needs LangChain (a peer dependency npm would install).
 */
export const EXTRAS = new Set(['@parley/langgraph']);

/** Every workspace package: `{ dir, manifest }`, `dir` relative to the repository root. */
export function workspacePackages() {
  return readdirSync(join(ROOT, 'packages'))
    .filter((name) => existsSync(join(ROOT, 'packages', name, 'package.json')))
    .map((name) => {
      const dir = `packages/${name}`;
      return { dir, manifest: JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) };
    });
}

/** The packages a user may install: those not marked `private`. */
export function publicPackages() {
  return workspacePackages().filter((p) => !p.manifest.private);
}

/**
 * Packs every public package of the built tree (run `tsc -b` first) into `out`, the extras into
 * `out/extras/`. Returns npm's report per package (`name`, `filename`, `files`, …) with `dir`
 * and `tarball` (absolute path) added.
 */
export function packAll(out) {
  const pkgs = publicPackages();
  mkdirSync(join(out, 'extras'), { recursive: true });
  const json = execFileSync(
    'npm',
    ['pack', '--json', '--pack-destination', out, ...pkgs.flatMap((p) => ['--workspace', p.dir])],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(json).map((report) => {
    const pkg = pkgs.find((p) => p.manifest.name === report.name);
    let tarball = join(out, report.filename);
    if (EXTRAS.has(report.name)) {
      const moved = join(out, 'extras', report.filename);
      renameSync(tarball, moved);
      tarball = moved;
    }
    return { ...report, dir: pkg.dir, manifest: pkg.manifest, tarball };
  });
}
