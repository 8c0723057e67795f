/**
 * HTTPS: an embedder's `createServer({tls})` and `parley serve --tls-cert
 * --tls-key`, with a self-signed certificate made here by openssl; the CLI
 * (`--cacert`, PARLEY_CACERT; requests and a watch) and the MCP server's node
 * client (`ca`) trust it, and refuse it without the CA.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NodeClient } from '@parley/mcp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, PARLEY_BIN, parley, type Started, startParley } from './http-harness.js';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const OPENSSL = hasOpenssl();
if (!OPENSSL && process.env.CI === 'true')
  throw new Error('openssl is missing: the HTTPS tests need it to make a certificate');
if (!OPENSSL) console.warn('SKIPPING the HTTPS tests: openssl is not installed');

let dir: string;
let cert: string;
let key: string;
let p: Started;

beforeAll(async () => {
  if (!OPENSSL) return;
  dir = await mkdtemp(join(tmpdir(), 'parley-https-'));
  cert = join(dir, 'cert.pem');
  key = join(dir, 'key.pem');
  // Self-signed for 127.0.0.1 and localhost: it is its own CA.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=parley-test',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  p = await startParley({ tls: { cert: await readFile(cert), key: await readFile(key) } });
});
afterAll(async () => {
  await p?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!OPENSSL)('HTTPS', () => {
  it('an embedded server with tls listens on https://; the CLI trusts it with --cacert or PARLEY_CACERT', async () => {
    expect(p.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const set = await parley(['--cacert', cert, 'state', 'set', '-n', 'tls', '-k', 'a', '-v', '{"x":1}'], {
      PARLEY_ENDPOINT: p.url,
    });
    expect(set.code, set.stderr).toBe(0);
    const get = await parley(['state', 'get', '-n', 'tls', '-k', 'a', '--print-value-only'], {
      PARLEY_ENDPOINT: p.url,
      PARLEY_CACERT: cert,
    });
    expect(get.stdout).toBe('{"x":1}\n');
  });

  it('without the CA the CLI refuses the certificate (exit 6, the reason named), and a missing CA file is exit 2', async () => {
    const r = await parley(['state', 'get', '-n', 'tls', '-k', 'a'], { PARLEY_ENDPOINT: p.url });
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY/);
    const missing = await parley(['--cacert', join(dir, 'nope.pem'), 'status'], { PARLEY_ENDPOINT: p.url });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.pem');
  });

  it('a watch streams over HTTPS', async () => {
    const child = spawn(process.execPath, [PARLEY_BIN, '--cacert', cert, 'state', 'watch', '-n', 'tlsw'], {
      env: { ...process.env, PARLEY_API_TOKEN: undefined, PARLEY_ENDPOINT: p.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const lines = createInterface({ input: child.stdout });
      const first = new Promise<string>((resolve) => lines.once('line', resolve));
      // The watch is open once the server counts its stream; then a write is its first event.
      await eventually(async () => (await p.server.metrics.watchStreams.get()).values[0]?.value === 1, 20_000, 25);
      await p.node.strong('tlsw').set('k', 'v');
      const event = JSON.parse(await first);
      expect(event, JSON.stringify(event)).toMatchObject({ key: 'k' });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it("the MCP server's node client trusts the CA it is given, and only then", async () => {
    const trusted = new NodeClient({ endpoint: p.url, ca: await readFile(cert) });
    expect(await trusted.call('GET', '/api/v1/distributed-state/tls/a')).toMatchObject({ value: { x: 1 } });
    const untrusted = new NodeClient({ endpoint: p.url });
    await expect(untrusted.call('GET', '/api/v1/distributed-state/tls/a')).rejects.toMatchObject({ code: 'transport' });
  });

  it('parley serve --tls-cert --tls-key serves HTTPS; one of the two alone is a usage error', async () => {
    const data = await mkdtemp(join(tmpdir(), 'parley-https-serve-'));
    const child = spawn(
      process.execPath,
      [PARLEY_BIN, '--output', 'json', 'serve', '--port', '0', '-d', data, '--tls-cert', cert, '--tls-key', key],
      { env: { ...process.env, PARLEY_API_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      const line = await new Promise<string>((resolve) =>
        createInterface({ input: child.stdout }).once('line', resolve),
      );
      const ready = JSON.parse(line);
      expect(ready).toMatchObject({ tls: true });
      expect(ready.url).toMatch(/^https:\/\//);
      const status = await parley(['--cacert', cert, '-e', ready.url, 'status'], {});
      expect(status.code, status.stderr).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await rm(data, { recursive: true, force: true });
    }
    const alone = await parley(['serve', '--port', '0', '--tls-cert', cert], {});
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--tls-cert and --tls-key go together');
  });
});
