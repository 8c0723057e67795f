// What every public tarball keeps to (docs/architecture.md, "Installing Parley"): compiled code,
// types and the ESM-only guard, nothing else (no tests, no source maps, no src/); every subpath of
// its exports map and its bins inside it; every package its code imports declared as a dependency;
// no private workspace package among its dependencies. Each check returns the problems it found.
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from './packages.mjs';

const BUILTINS = new Set(builtinModules);

/** The package a bare import specifier names (`@scope/name/sub` → `@scope/name`), or undefined. */
export function packageOf(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return BUILTINS.has(name) ? undefined : name;
}

/** Every module specifier a JavaScript or declaration file names: static, re-export and dynamic. */
export function importsOf(text) {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** Files of the tarball that should not be there. */
export function strayFiles(report) {
  const allowed = (path) =>
    path === 'package.json' ||
    path === 'esm-only.cjs' ||
    /^(README|LICENSE)(\.md)?$/i.test(path) ||
    /^bin\/[^/]+\.js$/.test(path) ||
    (/^dist\/.+\.(js|d\.ts)$/.test(path) && !/\.test\.(js|d\.ts)$/.test(path));
  return report.files.map((f) => f.path).filter((path) => !allowed(path));
}

/** Exports targets and bins that the tarball does not hold. */
export function missingTargets(report) {
  const paths = new Set(report.files.map((f) => f.path));
  const targets = [];
  for (const [subpath, conditions] of Object.entries(report.manifest.exports ?? {})) {
    for (const [condition, target] of Object.entries(conditions)) targets.push([`${subpath} (${condition})`, target]);
  }
  for (const [bin, target] of Object.entries(report.manifest.bin ?? {})) targets.push([`bin ${bin}`, target]);
  return targets
    .filter(([, target]) => !paths.has(target.replace(/^\.\//, '')))
    .map(([what, target]) => `${what} → ${target}`);
}

/** Packages imported by the tarball's code that its package.json does not declare, with a file each. */
export function undeclaredImports(report) {
  const m = report.manifest;
  const declared = new Set([
    m.name,
    ...Object.keys(m.dependencies ?? {}),
    ...Object.keys(m.peerDependencies ?? {}),
    ...Object.keys(m.optionalDependencies ?? {}),
  ]);
  const problems = new Map();
  for (const { path } of report.files) {
    if (!/\.(js|d\.ts)$/.test(path)) continue;
    for (const specifier of importsOf(readFileSync(join(ROOT, report.dir, path), 'utf8'))) {
      const name = packageOf(specifier);
      if (name && !declared.has(name) && !problems.has(name)) problems.set(name, `${name} (imported by ${path})`);
    }
  }
  return [...problems.values()];
}

/** Dependencies of a public package on private workspace packages. */
export function privateDependencies(manifest, workspace) {
  const privates = new Set(workspace.filter((p) => p.manifest.private).map((p) => p.manifest.name));
  return Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).filter((d) => privates.has(d));
}

/** Every problem of one packed package, as lines naming the package. */
export function problemsOf(report, workspace) {
  const tag = (what) => (line) => `${report.name}: ${what} ${line}`;
  return [
    ...strayFiles(report).map(tag('ships')),
    ...missingTargets(report).map(tag('lacks')),
    ...undeclaredImports(report).map(tag('imports undeclared')),
    ...privateDependencies(report.manifest, workspace).map(tag('depends on private')),
  ];
}
