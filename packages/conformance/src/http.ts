/**
 * `parley serve` as a child process (its HTTP API on 127.0.0.1, a port it
 * picks), HTTP calls in seed 000's envelope, and the built `parley` binary as
 * a client: what the seed-000 examples run against each backend.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestAsIs } from '@parley/server/client';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const PARLEY_BIN = join(ROOT, 'packages/cli/bin/parley.js');

function requireBuilt(): void {
  if (!existsSync(join(ROOT, 'packages/cli/dist/main.js'))) {
    throw new Error('packages/cli is not built: run `npx tsc -b` (npm ci and npm test do it)');
  }
}

export interface Served {
  url: string;
  /** `'raft'` or `'etcd'`, as `parley serve --output json` reports it. */
  strong: string;
  close(): Promise<void>;
}

/** Starts `parley --output json serve -p 0 <args>` with `token`; resolves once it serves. */
export async function serveParley(args: string[], token: string, timeoutMs = 30_000): Promise<Served> {
  requireBuilt();
  const dataDir = await mkdtemp(join(tmpdir(), 'parley-serve-'));
  const child: ChildProcess = spawn(
    process.execPath,
    [PARLEY_BIN, '--output', 'json', 'serve', '-d', dataDir, '-p', '0', ...args],
    { env: { ...process.env, PARLEY_API_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const info = await new Promise<{ url: string; strong?: string }>((resolve, reject) => {
      let out = '';
      let err = '';
      const timer = setTimeout(
        () => reject(new Error(`parley serve did not start in ${timeoutMs} ms: ${err}`)),
        timeoutMs,
      );
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line && out.includes('\n')) {
          clearTimeout(timer);
          resolve(JSON.parse(line) as { url: string; strong?: string });
        }
      });
      child.stderr?.on('data', (d: Buffer) => {
        if (err.length < 10_000) err += d.toString();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`parley serve exited (${code}): ${err}`));
      });
    });
    return { url: info.url, strong: info.strong ?? 'raft', close };
  } catch (e) {
    await close();
    throw e;
  }
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** The JSON body, or `{}` when the body is not JSON. */
  body: Record<string, unknown>;
  text: string;
}

/** One HTTP call; `body` is JSON-encoded unless it is a string (sent as is). */
export async function api(
  url: string,
  method: string,
  path: string,
  init: { body?: unknown; headers?: Record<string, string>; token?: string } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
  }
  // The path as written (not fetch, which drops a key `.` or `..`, even encoded, as a dot segment).
  const response = await requestAsIs(url, { method, path, headers, body, signal: AbortSignal.timeout(30_000) });
  const text = response.text;
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON (metrics)
  }
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) responseHeaders.append(name, v);
  }
  return { status: response.status, headers: responseHeaders, body: parsed, text };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `parley` binary. */
export function parley(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  requireBuilt();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PARLEY_BIN, ...args],
      { env: { ...process.env, PARLEY_API_TOKEN: undefined, ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Polls `probe` until it holds, at most `timeoutMs` (real-time TTL expiry only). */
export async function eventually(probe: () => Promise<boolean>, timeoutMs: number, stepMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
