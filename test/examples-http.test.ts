/**
 * The shell examples against a real `parley serve` process (started as `npm start`
 * does, on a free port, with a token): the curl CAS loop of examples/rollout-flags
 * and the seed-000 walkthrough of examples/shell-client.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARLEY_BIN, ROOT } from './http-harness.js';

const TOKEN = 'examples-token';
let serve: ChildProcess;
let dataDir: string;
let url: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'parley-examples-http-'));
  serve = spawn(process.execPath, [PARLEY_BIN, 'serve', '-p', '0', '-d', dataDir], {
    env: { ...process.env, PARLEY_API_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`parley serve did not start: ${out}`)), 20_000);
    serve.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /serving its HTTP API on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    serve.once('exit', (code) => reject(new Error(`parley serve exited ${code}: ${out}`)));
  });
});

afterAll(async () => {
  if (serve && serve.exitCode === null) {
    const exited = new Promise((r) => serve.once('exit', r));
    serve.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (serve.exitCode === null) serve.kill('SIGKILL');
  }
  rmSync(dataDir, { recursive: true, force: true });
});

const sh = (script: string, args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'sh',
      [join(ROOT, script), ...args],
      { env: { ...process.env, PARLEY_ENDPOINT: url, PARLEY_API_TOKEN: TOKEN }, timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

describe('examples over HTTP', () => {
  it('rollout-flags: three curl writers, no lost update', async () => {
    const r = await sh('examples/rollout-flags/curl-rollout.sh', ['3', '5']);
    expect(r.code, r.stderr).toBe(0);
    const final = JSON.parse(r.stdout.trim().split('\n').at(-1) as string);
    expect(final).toMatchObject({ pct: 15, updates: 15 });
  }, 40_000);

  it('shell-client: the seed-000 walkthrough passes every step', async () => {
    const r = await sh('examples/shell-client/walkthrough.sh', []);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).not.toContain('FAIL');
    expect(r.stdout).toContain('ok   worker-a\'s late write with its old fence is refused -> 409 "fence_stale"');
    expect(r.stdout).toContain('walkthrough complete');
  }, 40_000);
});
