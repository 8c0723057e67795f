/**
 * The packages as a user installs them (docs/architecture.md, "Installing Parley"), checked on the
 * built tree in seconds: declared engines that every locked dependency accepts (so `npm ci` prints
 * no EBADENGINE), the ESM-only guard on every subpath, no source maps, no private workspace package
 * as a dependency, every package the shipped code imports declared. The older versions that the
 * root's `overrides` choose for Node 20 run as their dependents call them. The tarballs themselves,
 * installed in a project outside the repository, are the proof run (`npm run test:install`).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { importsOf, packageOf, privateDependencies, strayFiles, undeclaredImports } from '../tools/pack/check.mjs';
import { publicPackages, ROOT, workspacePackages } from '../tools/pack/packages.mjs';

const require = createRequire(import.meta.url);
const semver = require('semver') as { subset(a: string, b: string): boolean };
const rootManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const ENGINES: string = rootManifest.engines.node;
const GUARD = readFileSync(join(ROOT, 'tools/pack/esm-only.cjs'), 'utf8');

/** What `files` ships of a package's dist/, as tools/pack/check.mjs reads an npm pack report. */
function shippedDist(dir: string): Array<{ path: string }> {
  const out: Array<{ path: string }> = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(ROOT, dir, rel))) {
      const path = `${rel}/${name}`;
      if (statSync(join(ROOT, dir, path)).isDirectory()) walk(path);
      else if (!/\.test\.|\.map$|\.tsbuildinfo$/.test(name)) out.push({ path });
    }
  };
  walk('dist');
  return out;
}

describe('engines', () => {
  it('every locked package accepts every Node version the packages declare', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const refusing = Object.entries(lock.packages as Record<string, { version?: string; engines?: { node?: string } }>)
      .filter(([, p]) => p.engines?.node && !semver.subset(ENGINES, p.engines.node))
      .map(([path, p]) => `${path}@${p.version} wants node ${p.engines?.node}`);
    expect(refusing).toEqual([]);
  });

  it('every workspace package declares the root engines', () => {
    for (const { manifest } of workspacePackages()) expect(manifest.engines, manifest.name).toEqual({ node: ENGINES });
  });
});

describe('public packages', () => {
  const pkgs = publicPackages();

  it('include the umbrella package and leave the test tools private', () => {
    const names = pkgs.map((p) => p.manifest.name);
    expect(names).toContain('parley');
    for (const tool of [
      '@parley/bench',
      '@parley/conformance',
      '@parley/fuzz',
      '@parley/scenarios',
      '@parley/torture',
    ]) {
      expect(names).not.toContain(tool);
    }
  });

  it.each(pkgs.map((p) => [p.manifest.name, p] as const))(
    '%s: ESM-only guard, MIT, no maps',
    (_name, { dir, manifest }) => {
      expect(manifest.license).toBe('MIT');
      expect(manifest.type).toBe('module');
      expect(manifest.files).toContain('esm-only.cjs');
      expect(manifest.files).toContain('!dist/**/*.map');
      expect(readFileSync(join(ROOT, dir, 'esm-only.cjs'), 'utf8')).toBe(GUARD);
      for (const [subpath, conditions] of Object.entries(manifest.exports as Record<string, Record<string, string>>)) {
        expect(Object.keys(conditions), subpath).toEqual(['types', 'import', 'require']);
        expect(conditions.require, subpath).toBe('./esm-only.cjs');
      }
    },
  );

  it.each(pkgs.map((p) => [p.manifest.name, p] as const))('%s: declares what its code imports', (_name, pkg) => {
    const report = { name: pkg.manifest.name, dir: pkg.dir, manifest: pkg.manifest, files: shippedDist(pkg.dir) };
    expect(report.files.length).toBeGreaterThan(0);
    expect(undeclaredImports(report)).toEqual([]);
    expect(privateDependencies(pkg.manifest, workspacePackages())).toEqual([]);
  });

  it('require() of any subpath says the packages are ESM-only', () => {
    for (const specifier of ['parley', 'parley/testing', '@parley/node', '@parley/interface']) {
      let message = '';
      try {
        execFileSync(process.execPath, ['-e', `require(${JSON.stringify(specifier)})`], { cwd: ROOT, stdio: 'pipe' });
      } catch (err) {
        message = String((err as { stderr: Buffer }).stderr);
      }
      expect(message, specifier).toMatch(/is an ES module package \(ESM-only\): load it with import/);
    }
  });
});

describe('moved packages', () => {
  it('the old path @parley/sim/testing re-exports @parley/testing, and parley/testing is it too', async () => {
    const now = await import('@parley/testing');
    for (const old of [await import('@parley/sim/testing'), await import('parley/testing')]) {
      expect(Object.keys(old).sort()).toEqual(Object.keys(now).sort());
      expect(old.simulate).toBe(now.simulate);
    }
  });
});

describe('the checks themselves', () => {
  it('read every kind of import and name the package of a specifier', () => {
    const text = `import a from 'a'; export * from '@s/b/sub'; const c = await import('c'); import './d.js'; import 'node:fs'; import 'fs';`;
    expect(importsOf(text).map(packageOf).filter(Boolean)).toEqual(['a', '@s/b', 'c']);
  });

  it('find a stray file, an undeclared import and a private dependency', () => {
    const report = {
      files: [{ path: 'dist/a.js' }, { path: 'dist/a.test.js' }, { path: 'dist/a.js.map' }, { path: 'src/a.ts' }],
    };
    expect(strayFiles(report)).toEqual(['dist/a.test.js', 'dist/a.js.map', 'src/a.ts']);
    const cli = publicPackages().find((p) => p.manifest.name === '@parley/cli')!;
    const withoutMcp = { ...cli.manifest, dependencies: { ...cli.manifest.dependencies, '@parley/mcp': undefined } };
    delete withoutMcp.dependencies['@parley/mcp'];
    expect(
      undeclaredImports({ name: '@parley/cli', dir: cli.dir, manifest: withoutMcp, files: shippedDist(cli.dir) }),
    ).toEqual([expect.stringMatching(/^@parley\/mcp \(imported by dist\/main\.js\)$/)]);
    expect(privateDependencies({ dependencies: { '@parley/bench': '0.1.0' } }, workspacePackages())).toEqual([
      '@parley/bench',
    ]);
  });
});

describe('overridden dependencies (root package.json "overrides") run as their dependents call them', () => {
  it("light-my-request's cookie: fastify inject with cookies", async () => {
    const app = fastify();
    app.get('/', async (req) => req.headers.cookie ?? '');
    const res = await app.inject({ url: '/', cookies: { a: 'b c', d: 'e' } });
    expect(res.body).toBe('a=b%20c; d=e');
    await app.close();
  });

  it("libp2p's p-retry: retries, factor, minTimeout and signal, as its reconnect queue passes them", async () => {
    const fromLibp2p = createRequire(join(ROOT, 'node_modules/libp2p/package.json'));
    const pRetry = (await import(pathToFileURL(fromLibp2p.resolve('p-retry')).href)).default;
    let attempts = 0;
    const value = await pRetry(
      async (attempt: number) => {
        attempts = attempt;
        if (attempt < 3) throw new Error(`attempt ${attempt} failed`);
        return 'connected';
      },
      { retries: 5, factor: 1, minTimeout: 1 },
    );
    expect([value, attempts]).toEqual(['connected', 3]);
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(pRetry(async () => 'never', { signal: controller.signal, retries: 1 })).rejects.toThrow('stopped');
  });
});
