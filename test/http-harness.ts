/**
 * A real Parley node (LevelDB in a temp dir, libp2p on loopback) behind a real
 * HTTP server on 127.0.0.1 port 0, for the http-* and cli-* tests; and the
 * built `parley` binary, run as a child process.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNode, type NodeOptions, type ParleyNode } from '@parley/node';
import { createServer, type ParleyServer, type ServerOptions } from '@parley/server';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const PARLEY_BIN = join(ROOT, 'packages/cli/bin/parley.js');

export interface Started {
  url: string;
  node: ParleyNode;
  server: ParleyServer;
  dataDir: string;
  close(): Promise<void>;
}

export async function startParley(
  options: Partial<Omit<ServerOptions, 'node'>> = {},
  nodeOptions: Omit<NodeOptions, 'dataDir'> = {},
): Promise<Started> {
  const dataDir = await mkdtemp(join(tmpdir(), 'parley-http-'));
  const node = await createNode({ listen: ['/ip4/127.0.0.1/tcp/0'], ...nodeOptions, dataDir });
  let server: ParleyServer;
  try {
    server = await createServer({ port: 0, defaultMetrics: false, ...options, node });
  } catch (err) {
    await node.close();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const url = await server.listen();
  return {
    url,
    node,
    server,
    dataDir,
    async close() {
      await server.close();
      await node.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ApiResponse {
  status: number;
  headers: Headers;
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
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json';
  }
  const response = await fetch(url + path, { method, headers, body, signal: AbortSignal.timeout(30_000) });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON (metrics, event streams)
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `parley` binary (npm ci and `npm test` build it; so does `npx tsc -b`). */
export function parley(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  if (!existsSync(join(ROOT, 'packages/cli/dist/main.js'))) {
    throw new Error('packages/cli is not built: run `npx tsc -b` (npm ci and npm test do it)');
  }
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

/** Polls `probe` until it returns true, at most `timeoutMs` (for real-time TTL expiry only). */
export async function eventually(probe: () => Promise<boolean>, timeoutMs: number, stepMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
