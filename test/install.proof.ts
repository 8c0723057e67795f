/**
 * The proof that Parley installs as a dependency, as the README's "Use it in your project" says:
 * `npm run pack` writes the public tarballs, a new project outside the repository (under the OS
 * temp dir) runs the README's commands — the Node 20 overrides, `npm install` of the tarballs —
 * and then, in that project: the README's `app.mjs` (two peers: an eventual write seen by the
 * other, a strong CAS with a stale version refused, a fenced lock), `parley --version`,
 * `require('parley')` refused as ESM-only, `parley/testing`, `parley serve` on a free port with a
 * CLI round trip, and an MCP handshake with `parley mcp` listing its tools.
 *
 * The commands are read from the README, so the README cannot drift from what is tested. The
 * one addition is `--prefer-offline`: npm takes the tarballs from the cache that `npm ci` filled
 * and asks the registry only for what the cache lacks. Nothing here skips: a missing piece fails.
 * Run by `npm run test:install` (test/install.config.ts), in CI after `npm test`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'packages/parley/package.json'), 'utf8')).version;

/** The README's "Use it in your project" section. */
function section(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## Use it in your project\n');
  expect(start, 'README has a "Use it in your project" section').toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The fenced code blocks of one language in the section. */
function blocks(lang: string): string[] {
  return [...section().matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] as string);
}

/** The first command line of the section's shell blocks that starts with `prefix`, comments cut. */
function command(prefix: string): string[] {
  const line = blocks('sh')
    .flatMap((b) => b.split('\n'))
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .find((l) => l.startsWith(prefix));
  expect(line, `README shows \`${prefix} …\``).toBeDefined();
  return (line as string).split(/\s+/);
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], cwd: string, timeout = 120_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, timeout, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function ok(file: string, args: string[], cwd: string, timeout?: number): Promise<Run> {
  const r = await run(file, args, cwd, timeout);
  expect(r.code, `${file} ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

let work: string;
let packs: string;
let app: string;
let install: Run;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'parley-install-'));
  expect(work.startsWith(ROOT)).toBe(false);
  packs = join(work, 'packs');
  app = join(work, 'my-app');
  mkdirSync(app);

  // In this repository: `npm run pack`, to a folder of the test's own.
  expect(section()).toContain('npm ci && npm run pack');
  await ok('npm', ['run', 'pack', '--', packs], ROOT, 300_000);

  // In the project: npm init -y, the overrides line, npm install of the tarballs.
  await ok('npm', ['init', '-y'], app);
  const [, ...pkgSet] = command('npm pkg set');
  await ok('npm', pkgSet, app);
  const [, , tarballs, ...rest] = command('npm install');
  expect(tarballs).toBe('/path/to/parley/packs/*.tgz');
  const files = readdirSync(packs)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => join(packs, f));
  expect(files.length).toBeGreaterThanOrEqual(10);
  install = await ok(
    'npm',
    ['install', ...files, ...rest, '--prefer-offline', '--no-audit', '--no-fund'],
    app,
    540_000,
  );
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('a project outside the repository, installed from the tarballs', () => {
  it('installs without an engine warning, and holds compiled code only', () => {
    expect(install.stdout + install.stderr).not.toMatch(/EBADENGINE/);
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies)).toContain('parley');
    const node = join(app, 'node_modules/@parley/node');
    expect(existsSync(join(node, 'dist/index.js'))).toBe(true);
    expect(existsSync(join(node, 'src'))).toBe(false);
    const shipped = readdirSync(join(node, 'dist'), { recursive: true }).map(String);
    expect(shipped.filter((f) => /\.map$|\.test\./.test(f))).toEqual([]);
  });

  it("runs the README's app.mjs: an eventual write seen by the other peer, a strong CAS, a fenced lock", async () => {
    const [example] = blocks('js');
    expect(example).toContain("from 'parley'");
    writeFileSync(join(app, 'app.mjs'), example as string);
    const r = await ok(process.execPath, ['app.mjs'], app, 120_000);
    expect(r.stdout).toContain('b sees { pct: 25 }');
    expect(r.stdout).toContain('stale CAS refused: version_mismatch');
    expect(r.stdout).toMatch(/fenced write done, fence \d+/);
  });

  it('has the parley command: parley --version', async () => {
    expect((await ok('npx', ['parley', '--version'], app)).stdout.trim()).toBe(VERSION);
  });

  it('refuses require() with the ESM-only message, and serves parley/testing to import', async () => {
    const r = await run(process.execPath, ['-e', "require('parley')"], app);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('parley is an ES module package (ESM-only)');
    const t = await ok(
      process.execPath,
      ['--input-type=module', '-e', "import { simulate } from 'parley/testing'; console.log(typeof simulate);"],
      app,
    );
    expect(t.stdout.trim()).toBe('function');
  });

  it('serves with parley serve on a free port: a CLI round trip, and parley mcp lists its tools', async () => {
    const bin = join(app, 'node_modules/.bin/parley');
    const serve: ChildProcess = spawn(
      bin,
      ['--output', 'json', 'serve', '--port', '0', '--data-dir', './.parley-serve'],
      {
        cwd: app,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, PARLEY_API_TOKEN: '' },
      },
    );
    try {
      const banner = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('parley serve printed nothing in 60 s')), 60_000);
        serve.once('exit', (code) => reject(new Error(`parley serve exited (${code})`)));
        createInterface({ input: serve.stdout! }).once('line', (line) => {
          clearTimeout(timer);
          resolve(line);
        });
      });
      const { url } = JSON.parse(banner) as { url: string };
      const endpoint = new URL(url).host; // host:port, as the README's -e 127.0.0.1:4100
      const value = '{"phase":"deploying"}';
      await ok(
        'npx',
        ['parley', '-e', endpoint, 'distributed-state', 'set', '-n', 'deploy', '-k', 'status', '-v', value],
        app,
      );
      const got = await ok(
        'npx',
        ['parley', '-e', endpoint, 'distributed-state', 'get', '-n', 'deploy', '-k', 'status', '--print-value-only'],
        app,
      );
      expect(got.stdout.trim()).toBe(value);

      const client = new Client({ name: 'parley-install-proof', version: VERSION });
      await client.connect(new StdioClientTransport({ command: bin, args: ['-e', endpoint, 'mcp'], cwd: app }));
      try {
        const names = (await client.listTools()).tools.map((t) => t.name);
        expect(names).toEqual(expect.arrayContaining(['state_get', 'state_set', 'lock_acquire', 'lock_renew']));
        const read = await client.callTool({ name: 'state_get', arguments: { namespace: 'deploy', key: 'status' } });
        expect(JSON.stringify(read.content)).toContain('deploying');
      } finally {
        await client.close();
      }
    } finally {
      const exited = new Promise((resolve) => (serve.exitCode !== null ? resolve(null) : serve.once('exit', resolve)));
      serve.kill('SIGINT');
      const timer = setTimeout(() => serve.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
  });
});
