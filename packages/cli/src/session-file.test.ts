/**
 * `--session <file>`: the built `parley` against a stand-in HTTP server that
 * records the `Parley-Session` header it gets and answers a new token. The
 * token is read from the file (a missing file is a new session), sent, and the
 * answered one written back atomically; a failure without a token leaves the
 * file as it was; `session_behind` exits 6.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNode, Session } from '@parley/node';
import { createServer as createParleyServer } from '@parley/server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from './exit-codes.js';
import { readSessionFile, writeSessionFile } from './session-file.js';

const BIN = fileURLToPath(new URL('../bin/parley.js', import.meta.url));
const built = existsSync(fileURLToPath(new URL('../dist/main.js', import.meta.url)));

let server: Server;
let endpoint: string;
let dir: string;
/** Each request's method, path and Parley-Session header (undefined: none). */
const got: Array<{ method: string; url: string; session: string | undefined }> = [];
/** How the stand-in answers: a status, an error code, and whether it sends a token. */
let answer: { status: number; error?: string; token?: string } = { status: 200 };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-cli-session-'));
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const session = req.headers['parley-session'];
      got.push({
        method: req.method ?? '',
        url: req.url ?? '',
        session: typeof session === 'string' ? session : undefined,
      });
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (answer.token !== undefined && session !== undefined) headers['parley-session'] = answer.token;
      const entry = { namespace: 'n', key: 'k', value: 1, version: 'v1', operation: 'updated', ttl_seconds: 60 };
      const body =
        answer.error === undefined
          ? { status: answer.status, msg: 'OK', data: entry }
          : { status: answer.status, msg: answer.error, error: answer.error };
      res.writeHead(answer.status, headers).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  got.length = 0;
  answer = { status: 200 };
});

function parley(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '-e', endpoint, ...args], (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}

describe.skipIf(!built)('parley --session <file>', () => {
  it('starts a session when the file is missing, and writes the answered token back', async () => {
    const file = join(dir, 'new.session');
    answer = { status: 200, token: 'AQIA' };
    const r = await parley('replicated', 'get', '-n', 'n', '-k', 'k', '--session', file);
    expect(r.code, r.stderr).toBe(0);
    expect(got).toEqual([{ method: 'GET', url: '/api/v1/replicated/n/k', session: '' }]);
    expect(readFileSync(file, 'utf8')).toBe('AQIA\n');
    // No temporary file is left beside it.
    expect(readdirSync(dir).filter((f) => f.includes('new.session'))).toEqual(['new.session']);
  });

  it('sends the token from the file on each command that takes it', async () => {
    const file = join(dir, 'each.session');
    const commands: string[][] = [
      ['replicated', 'set', '-n', 'n', '-k', 'k', '-v', '1', '-t', '60'],
      ['replicated', 'increment', '-n', 'n', '-k', 'k'],
      ['replicated', 'get', '-n', 'n', '-k', 'k'],
      ['replicated', 'delete', '-n', 'n', '-k', 'k'],
      ['state', 'set', '-n', 'n', '-k', 'k', '-v', '1', '-t', '60'],
      ['state', 'get', '-n', 'n', '-k', 'k', '-c', 'serializable'],
      ['state', 'delete', '-n', 'n', '-k', 'k'],
      ['claim', '-n', 'n', '-k', 'k', '-v', '1'],
    ];
    let n = 0;
    for (const command of commands) {
      writeFileSync(file, `AQ${n}\n`);
      answer = { status: 200, token: `AQ${n + 1}` };
      got.length = 0;
      const r = await parley(...command, '--session', file);
      expect(r.code, `${command.join(' ')}: ${r.stderr}`).toBe(0);
      expect(
        got.map((g) => g.session),
        command.join(' '),
      ).toEqual([`AQ${n}`]);
      expect(readFileSync(file, 'utf8'), command.join(' ')).toBe(`AQ${n + 1}\n`);
      n++;
    }
  });

  it('state list takes it; a command without --session sends no header', async () => {
    const file = join(dir, 'list.session');
    writeFileSync(file, 'AQ5');
    answer = { status: 200, token: 'AQ6' };
    await parley('state', 'list', '-n', 'n', '--session', file);
    expect(got.at(-1)?.session).toBe('AQ5');
    await parley('state', 'get', '-n', 'n', '-k', 'k');
    expect(got.at(-1)?.session).toBeUndefined();
  });

  it('keeps the token of a 404 read (the node answered one), and keeps the file on a failure without one', async () => {
    const file = join(dir, 'fail.session');
    writeFileSync(file, 'AQ1\n');
    answer = { status: 404, error: 'key_not_found', token: 'AQ2' };
    expect((await parley('state', 'get', '-n', 'n', '-k', 'k', '--session', file)).code).toBe(EXIT.notFound);
    expect(readFileSync(file, 'utf8')).toBe('AQ2\n');
    answer = { status: 400, error: 'invalid_argument' };
    expect((await parley('state', 'get', '-n', 'n', '-k', 'k', '--session', file)).code).toBe(EXIT.usage);
    expect(readFileSync(file, 'utf8')).toBe('AQ2\n');
  });

  it('session_behind exits 6 (retry), the file unchanged', async () => {
    const file = join(dir, 'behind.session');
    writeFileSync(file, 'AQ1\n');
    answer = { status: 503, error: 'session_behind' };
    const r = await parley('replicated', 'get', '-n', 'n', '-k', 'k', '--session', file);
    expect(r.code).toBe(EXIT.unavailable);
    expect(readFileSync(file, 'utf8')).toBe('AQ1\n');
  });
});

describe.skipIf(!built)('parley --session <file> on a real node', () => {
  it('keeps the session the node moved: a write, then a read that carries it', async () => {
    const nodeDir = mkdtempSync(join(tmpdir(), 'parley-cli-session-node-'));
    const node = await createNode({ dataDir: nodeDir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
    const http = await createParleyServer({ node, port: 0, defaultMetrics: false });
    try {
      const url = await http.listen();
      const file = join(dir, 'real.session');
      const run = (...args: string[]) =>
        new Promise<{ code: number; stdout: string }>((resolve) =>
          execFile(process.execPath, [BIN, '-e', url, '--output', 'json', ...args], (err, stdout) =>
            resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), stdout }),
          ),
        );
      expect(
        (await run('replicated', 'set', '-n', 'cart', '-k', 'alice', '-v', '"book"', '-t', '60', '--session', file))
          .code,
      ).toBe(0);
      const afterWrite = readFileSync(file, 'utf8').trim();
      expect(Session.from(afterWrite).eventual('cart')?.size).toBe(1);
      const read = await run('replicated', 'get', '-n', 'cart', '-k', 'alice', '--session', file);
      expect(read.code).toBe(0);
      expect(JSON.parse(read.stdout)).toMatchObject({ value: 'book' });
      expect(readFileSync(file, 'utf8').trim()).toBe(afterWrite);
      expect((await run('state', 'set', '-n', 'cart', '-k', 'x', '-v', '1', '-t', '60', '--session', file)).code).toBe(
        0,
      );
      expect(Session.from(readFileSync(file, 'utf8').trim()).strong).toBeGreaterThan(0);
    } finally {
      await http.close();
      await node.close();
      rmSync(nodeDir, { recursive: true, force: true });
    }
  });
});

describe('the session file', () => {
  it('reads a missing file as a new session and trims what surrounds the token', async () => {
    const file = join(dir, 'unit.session');
    expect(await readSessionFile(join(dir, 'absent'))).toBe('');
    await writeSessionFile(file, 'AQID');
    expect(readFileSync(file, 'utf8')).toBe('AQID\n');
    writeFileSync(file, '  AQID \n\n');
    expect(await readSessionFile(file)).toBe('AQID');
  });

  it('refuses a file too large to be a token, and an unreadable path', async () => {
    const file = join(dir, 'huge.session');
    writeFileSync(file, 'A'.repeat(20_000));
    await expect(readSessionFile(file)).rejects.toThrow(/more than a session token can be/);
    await expect(readSessionFile(dir)).rejects.toThrow(/cannot read/);
    await expect(writeSessionFile(join(dir, 'no', 'such', 'dir'), 'AQ')).rejects.toThrow(/call was done/);
  });
});
