// The browser bundle of @parley/browser: one ES module (`parley-browser.js`) and the chunks
// it loads on first use (browser-level's IndexedDB store; Yjs with `ns.yjs()`), built with
// vite (rolldown) from the TypeScript sources of this package and the pure ones it uses.
// `npm run size:browser [-- --json FILE] [-- outDir]` builds it, prints each file's size gzipped and
// the anchor's (all of Yjs, built the same way), and writes the rows to FILE.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const packages = join(here, '..');

/** Each `@parley/<pkg>[/<sub>]` export resolved to its TypeScript source (as vitest.config.ts does). */
export function sourceAliases() {
  const out = [];
  for (const dir of readdirSync(packages)) {
    let manifest;
    try {
      manifest = JSON.parse(readFileSync(join(packages, dir, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      const file = target.import?.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts');
      if (!manifest.name || !file) continue;
      const find = `${manifest.name}${subpath.slice(1)}`;
      out.push({ find: new RegExp(`^${find.replace(/[/.]/g, '\\$&')}$`), replacement: join(packages, dir, file) });
    }
  }
  return out;
}

async function bundle(entry, outDir, fileName) {
  await build({
    configFile: false,
    logLevel: 'silent',
    resolve: { alias: sourceAliases() },
    build: {
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      minify: true,
      lib: { entry, formats: ['es'], fileName: () => fileName },
    },
  });
  return sizes(outDir);
}

function sizes(outDir) {
  return readdirSync(outDir)
    .filter((f) => f.endsWith('.js'))
    .map((file) => {
      const bytes = readFileSync(join(outDir, file));
      return { file, bytes: bytes.length, gzipBytes: gzipSync(bytes, { level: 9 }).length };
    });
}

/** Builds the bundle into `outDir`; returns every file with its size and gzipped size in bytes. */
export function buildBundle(outDir) {
  return bundle(join(here, 'src/index.ts'), outDir, 'parley-browser.js');
}

/** The anchor, built the same way: all of Yjs (the version this package depends on) as one module. */
export async function buildYjsAnchor() {
  const dir = mkdtempSync(join(tmpdir(), 'parley-yjs-anchor-'));
  try {
    return await bundle(fileURLToPath(import.meta.resolve('yjs')), dir, 'yjs.js');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const j = args.indexOf('--json');
  const jsonFile = j >= 0 ? args.splice(j, 2)[1] : undefined;
  const outDir = args[0] ?? join(tmpdir(), 'parley-browser-bundle');
  const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
  const files = await buildBundle(outDir);
  for (const f of files) console.log(`${f.file}\t${kb(f.bytes)}\t${kb(f.gzipBytes)} gzipped`);
  const total = files.reduce((n, f) => n + f.gzipBytes, 0);
  const withoutYjs = files.filter((f) => !f.file.startsWith('yjs')).reduce((n, f) => n + f.gzipBytes, 0);
  const [yjs] = await buildYjsAnchor();
  console.log(`@parley/browser gzipped: ${kb(total)} in all, ${kb(withoutYjs)} without the Yjs chunk`);
  console.log(
    `anchor, all of Yjs built the same way: ${kb(yjs.gzipBytes)} gzipped (ratio ${(total / yjs.gzipBytes).toFixed(2)}×)`,
  );
  if (jsonFile) {
    const anchor = 'yjs 13.6.33, all of it, same build';
    const row = (name, bytes) => ({
      name,
      unit: 'KB gzipped',
      value: Number((bytes / 1024).toFixed(1)),
      anchor,
      anchorValue: Number((yjs.gzipBytes / 1024).toFixed(1)),
      ratio: Number((bytes / yjs.gzipBytes).toFixed(2)),
    });
    const rows = [row('browser bundle, everything', total), row('browser bundle without the Yjs chunk', withoutYjs)];
    writeFileSync(jsonFile, `${JSON.stringify(rows, null, 2)}\n`);
  }
}
