/**
 * The real `parley` binary against a real server: `--output json` shapes,
 * table output, and exit codes by error class. Then `parley serve` and
 * `parley cluster up` as child processes, stopped by SIGINT.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, PARLEY_BIN, parley, type Started, startParley } from './http-harness.js';

let p: Started;
let env: Record<string, string>;
const cli = (...args: string[]) => parley(args, env);
const json = async (...args: string[]) => {
  const r = await cli('--output', 'json', ...args);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
};

beforeAll(async () => {
  p = await startParley();
  env = { PARLEY_ENDPOINT: p.url };
});
afterAll(async () => {
  await p?.close();
});

describe('parley distributed-state', () => {
  it('json shapes of set, get, list, delete', async () => {
    const set = await json('distributed-state', 'set', '-n', 'c1', '-k', 'a', '-v', '{"x":1}', '-t', '60');
    expect(Object.keys(set).sort()).toEqual(
      [
        'created_at',
        'expires_at',
        'key',
        'namespace',
        'operation',
        'ttl_seconds',
        'updated_at',
        'value',
        'version',
      ].sort(),
    );
    expect(set).toMatchObject({ namespace: 'c1', key: 'a', value: { x: 1 }, ttl_seconds: 60, operation: 'created' });
    const get = await json('state', 'get', '-n', 'c1', '-k', 'a');
    expect(get).toMatchObject({ version: set.version, value: { x: 1 } });
    expect(get.operation).toBeUndefined();
    await api(p.url, 'POST', '/api/v1/distributed-state/c1/b', { body: { value: 'two' } });
    const page = await json('distributed-state', 'list', '-n', 'c1', '-l', '1', '--sort-by', 'key');
    expect(page.items.map((e: { key: string }) => e.key)).toEqual(['a']);
    expect(typeof page.next_cursor).toBe('string');
    const next = await json(
      'distributed-state',
      'list',
      '-n',
      'c1',
      '-l',
      '1',
      '--sort-by',
      'key',
      '--cursor',
      page.next_cursor,
    );
    expect(next.items.map((e: { key: string }) => e.key)).toEqual(['b']);
    expect(await json('distributed-state', 'delete', '-n', 'c1', '-k', 'b')).toEqual({
      namespace: 'c1',
      key: 'b',
      deleted: true,
    });
  });

  it('get and list read serializable or bounded with -c, --max-staleness-ms, --max-lag-entries', async () => {
    await json('state', 'set', '-n', 'c5', '-k', 'a', '-v', '1');
    for (const flags of [
      ['-c', 'serializable'],
      ['--max-staleness-ms', '1000'],
      ['-c', 'bounded', '--max-lag-entries', '0'],
    ]) {
      expect(await json('state', 'get', '-n', 'c5', '-k', 'a', ...flags)).toMatchObject({ value: 1 });
      const page = await json('state', 'list', '-n', 'c5', ...flags);
      expect(page.items.map((e: { key: string }) => e.key)).toEqual(['a']);
    }
    const bad = await cli('state', 'get', '-n', 'c5', '-k', 'a', '-c', 'serializable', '--max-staleness-ms', '5');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bounded/);
  });

  it('table output for a person', async () => {
    const list = await cli('distributed-state', 'list', '-n', 'c1');
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^KEY\s+VERSION\s+UPDATED\s+EXPIRES\s+VALUE$/);
    expect(list.stdout).toContain('{"x":1}');
    const get = await cli('distributed-state', 'get', '-n', 'c1', '-k', 'a');
    expect(get.stdout).toMatch(/^FIELD\s+VALUE\n/);
  });

  it('exit codes follow the error class', async () => {
    // Independent commands: run side by side.
    const [notFound, conflict, badJson, badTtl, missingFlag, unknown, badOutput, unreachable, help] = await Promise.all(
      [
        cli('distributed-state', 'get', '-n', 'c1', '-k', 'missing'),
        cli('distributed-state', 'set', '-n', 'c1', '-k', 'a', '-v', '1', '--if-not-exists'),
        cli('distributed-state', 'set', '-n', 'c1', '-k', 'a', '-v', 'not json'),
        cli('distributed-state', 'set', '-n', 'c1', '-k', 'a', '-v', '1', '-t', '0'),
        cli('distributed-state', 'get', '-n', 'c1'),
        cli('distributed-state', 'frobnicate'),
        cli('--output', 'yaml', 'distributed-state', 'get', '-n', 'c1', '-k', 'a'),
        parley(['distributed-state', 'get', '-n', 'c1', '-k', 'a'], { PARLEY_ENDPOINT: 'http://127.0.0.1:1' }),
        cli('--help'),
      ],
    );
    expect(notFound.code).toBe(3);
    expect(conflict.code).toBe(4);
    expect(badJson.code).toBe(2);
    expect(badTtl.code).toBe(2);
    expect(badTtl.stderr).toContain('400 invalid_argument');
    expect(missingFlag.code).toBe(2);
    expect(unknown.code).toBe(2);
    expect(badOutput.code).toBe(2);
    expect(unreachable.code).toBe(6);
    expect(unreachable.stderr).toContain('cannot reach');
    expect(help.code).toBe(0);
    // nothing above changed the entry
    const entry = await api(p.url, 'GET', '/api/v1/distributed-state/c1/a');
    expect((entry.body.data as { value: unknown }).value).toEqual({ x: 1 });
  });

  it('--endpoint overrides PARLEY_ENDPOINT; errors in json mode are the envelope on stderr', async () => {
    const r = await parley(
      ['--output', 'json', '--endpoint', p.url, 'distributed-state', 'get', '-n', 'c1', '-k', 'nope'],
      {
        PARLEY_ENDPOINT: 'http://127.0.0.1:1',
      },
    );
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stderr)).toEqual({ status: 404, msg: expect.any(String), error: 'key_not_found' });
    expect(r.stdout).toBe('');
  });
});

describe('parley with keys "." and ".."', () => {
  it('set, get, lock and delete them as keys (not as dot segments of the URL)', async () => {
    expect(await json('state', 'set', '-n', 'dots', '-k', '.', '-v', '"one"')).toMatchObject({
      key: '.',
      value: 'one',
    });
    expect(await json('state', 'set', '-n', 'dots', '-k', '..', '-v', '"two"')).toMatchObject({
      key: '..',
      value: 'two',
    });
    expect(await json('state', 'get', '-n', 'dots', '-k', '.')).toMatchObject({ key: '.', value: 'one' });
    expect(await json('state', 'get', '-n', 'dots', '-k', '..')).toMatchObject({ key: '..', value: 'two' });
    const grant = await json('lock', 'acquire', '-n', 'dots', '-k', '..', '--owner', 'o');
    expect(grant).toMatchObject({ key: '..', owner: 'o' });
    const renewed = await json('lock', 'renew', '-n', 'dots', '-k', '..', '--owner', 'o', '-f', String(grant.fence));
    expect(renewed).toMatchObject({ key: '..', fence: grant.fence });
    expect(await json('state', 'delete', '-n', 'dots', '-k', '..')).toEqual({
      namespace: 'dots',
      key: '..',
      deleted: true,
    });
    expect((await cli('state', 'get', '-n', 'dots', '-k', '..')).code).toBe(3);
    expect((await json('state', 'list', '-n', 'dots')).items.map((e: { key: string }) => e.key)).toEqual(['.']);
  });
});

describe('parley with values holding __proto__ and constructor keys', () => {
  it('stores them exactly and answers them back', async () => {
    const value = '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"n":[{"__proto__":1}]}';
    const set = await cli('--output', 'json', 'state', 'set', '-n', 'proto', '-k', 'k', '-v', value);
    expect(set.code, set.stderr).toBe(0);
    const got = await cli('--output', 'json', 'state', 'get', '-n', 'proto', '-k', 'k');
    expect(got.code, got.stderr).toBe(0);
    // Compared as JSON text: own keys, in order, never a prototype.
    expect(JSON.stringify(JSON.parse(got.stdout).value)).toBe(JSON.stringify(JSON.parse(value)));
    const replicated = await cli('--output', 'json', 'replicated', 'set', '-n', 'proto', '-k', 'k', '-v', value);
    expect(replicated.code, replicated.stderr).toBe(0);
    expect(JSON.stringify(JSON.parse(replicated.stdout).value)).toBe(JSON.stringify(JSON.parse(value)));
  });
});

describe('parley --endpoint forms', () => {
  it('takes host:port and localhost:port; garbage is a usage error (exit 2), never a stack trace', async () => {
    const port = new URL(p.url).port;
    await json('distributed-state', 'set', '-n', 'ep', '-k', 'k', '-v', '1');
    const [hostPort, localhost, env, garbage, badEnv] = await Promise.all([
      parley(['--output', 'json', '-e', `127.0.0.1:${port}`, 'state', 'get', '-n', 'ep', '-k', 'k'], {}),
      parley(['--output', 'json', '-e', `localhost:${port}`, 'state', 'get', '-n', 'ep', '-k', 'k'], {}),
      parley(['--output', 'json', 'state', 'get', '-n', 'ep', '-k', 'k'], { PARLEY_ENDPOINT: `127.0.0.1:${port}` }),
      parley(['-e', 'not a url', 'state', 'get', '-n', 'ep', '-k', 'k'], {}),
      parley(['state', 'get', '-n', 'ep', '-k', 'k'], { PARLEY_ENDPOINT: 'ftp://127.0.0.1:1' }),
    ]);
    for (const r of [hostPort, localhost, env]) {
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).value).toBe(1);
    }
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toMatch(/^error: --endpoint: 'not a url' is not a URL or host:port/);
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toMatch(/^error: PARLEY_ENDPOINT: 'ftp:\/\/127\.0\.0\.1:1' must be http/);
    for (const r of [garbage, badEnv]) expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('parley replicated and status', () => {
  it('set, increment, get, list, delete', async () => {
    const set = await json('replicated', 'set', '-n', 'r1', '-k', 'flag', '-v', 'true');
    expect(set).toMatchObject({ namespace: 'r1', key: 'flag', value: true, operation: 'created' });
    expect((await json('replicated', 'increment', '-n', 'r1', '-k', 'hits', '-b', '5')).value).toBe(5);
    expect((await json('replicated', 'increment', '-n', 'r1', '-k', 'hits', '-b', '-2')).value).toBe(3);
    const list = await json('replicated', 'list', '-n', 'r1');
    expect(list.items.map((e: { key: string }) => e.key).sort()).toEqual(['flag', 'hits']);
    await json('replicated', 'delete', '-n', 'r1', '-k', 'flag');
    expect((await cli('replicated', 'get', '-n', 'r1', '-k', 'flag')).code).toBe(3);
  });

  it('status names the node, its data dir and the Raft leader', async () => {
    const status = await json('status');
    expect(status.node.peerId).toBe(p.node.peerId);
    expect(status.node.dataDir).toBe(p.dataDir);
    expect(status.cluster.leader).toBe(p.node.peerId);
    const table = await cli('status');
    expect(table.stdout).toContain(`peer id   ${p.node.peerId}`);
  });
});

// ---------------------------------------------------------------- serve and cluster up

function waitLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line within ${timeoutMs} ms`)), timeoutMs);
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before printing`));
    });
  });
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function freePorts(n: number): Promise<number> {
  // A run of n consecutive free ports: start from one the kernel hands out, check the next ones.
  const probe = (port: number) =>
    new Promise<ReturnType<typeof createNetServer> | undefined>((r) => {
      const s = createNetServer();
      s.once('error', () => r(undefined));
      s.listen(port, '127.0.0.1', () => r(s));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = await probe(0);
    if (first === undefined) continue;
    const base = (first.address() as { port: number }).port;
    await new Promise((r) => first.close(r));
    if (base + n > 65_535) continue;
    const servers: ReturnType<typeof createNetServer>[] = [];
    let ok = true;
    for (let i = 0; i < n && ok; i++) {
      const s = await probe(base + i);
      ok = s !== undefined;
      if (s !== undefined) servers.push(s);
    }
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    if (ok) return base;
  }
  throw new Error('no free port range');
}

describe('parley serve', () => {
  it('serves, prints where, and stops cleanly on SIGINT', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-serve-'));
    const child = spawn(process.execPath, [PARLEY_BIN, '--output', 'json', 'serve', '--port', '0', '--data-dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PARLEY_API_TOKEN: '' },
    });
    try {
      const ready = JSON.parse(await waitLine(child, 30_000));
      expect(ready).toMatchObject({ dataDir: dir, auth: false });
      expect((await api(ready.url, 'GET', '/healthz')).status).toBe(200);
      const set = await api(ready.url, 'POST', '/api/v1/distributed-state/s/k', { body: { value: 1 } });
      expect(set.status).toBe(201);
      child.kill('SIGINT');
      expect(await waitExit(child, 15_000)).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a non-loopback bind without a token (exit 2), before starting a node', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-serve-'));
    try {
      const r = await parley(['serve', '--host', '0.0.0.0', '--port', '0', '--data-dir', join(dir, 'd')]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('PARLEY_API_TOKEN');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('parley cluster up', () => {
  it('starts 3 voters, prints their endpoints, and Ctrl-C stops them all', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-cluster-'));
    const http = await freePorts(3);
    const p2p = await freePorts(3);
    const child = spawn(
      process.execPath,
      [
        ...[PARLEY_BIN, '--output', 'json', 'cluster', 'up', '-n', '3', '--dir', dir],
        ...['--base-port', String(http), '--p2p-base-port', String(p2p)],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PARLEY_API_TOKEN: '' } },
    );
    const stderr: string[] = [];
    child.stderr!.on('data', (c: Buffer) => stderr.push(c.toString()));
    let pids: number[] = [];
    try {
      const line = JSON.parse(await waitLine(child, 60_000));
      pids = (line.nodes as Array<{ pid: number }>).map((n) => n.pid);
      expect(line.nodes).toHaveLength(3);
      const urls = line.nodes.map((n: { url: string }) => n.url);
      expect(urls).toEqual([0, 1, 2].map((i) => `http://127.0.0.1:${http + i}`));
      for (const url of urls) expect((await api(url, 'GET', '/healthz')).status).toBe(200);
      // One strong write through any node, read back through another.
      const set = await api(urls[1], 'POST', '/api/v1/distributed-state/demo/k', { body: { value: 'v' } });
      expect(set.status, JSON.stringify(set.body)).toBe(201);
      const get = await api(urls[2], 'GET', '/api/v1/distributed-state/demo/k');
      expect((get.body.data as { value: unknown }).value).toBe('v');
      child.kill('SIGINT');
      expect(await waitExit(child, 30_000)).toBe(0);
      for (const n of line.nodes as Array<{ pid: number }>) {
        expect(() => process.kill(n.pid, 0)).toThrow();
      }
    } finally {
      child.kill('SIGKILL');
      // A failed run must not leave the voters behind: their parent's SIGKILL does not reach them.
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('parley at a terminal', () => {
  // `script` gives the command a pseudo-terminal, so stdin.isTTY holds, as for a person typing.
  const atTerminal = (args: string[], input: string) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const command = [process.execPath, PARLEY_BIN, ...args].map((a) => `'${a}'`).join(' ');
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, PARLEY_ENDPOINT: p.url },
      });
      let out = '';
      let answered = false;
      child.stdin!.on('error', () => {}); // the command may be gone before its pty drains
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (!answered && out.includes('[y/N]')) {
          answered = true;
          child.stdin!.write(input);
        }
      });
      child.on('exit', (code) => resolve({ code, out }));
    });

  it('delete-namespace without --confirm asks; only "y" deletes', async () => {
    await api(p.url, 'POST', '/api/v1/distributed-state/tty/a', { body: { value: 1 } });
    const keys = async () =>
      ((await api(p.url, 'GET', '/api/v1/distributed-state/tty')).body.data as { items: unknown[] }).items.length;
    const no = await atTerminal(['distributed-state', 'delete-namespace', '-n', 'tty'], 'n\n');
    expect(no.out).toContain("Delete every key in namespace 'tty'?");
    expect(no.code).toBe(2);
    expect(await keys()).toBe(1);
    const yes = await atTerminal(['distributed-state', 'delete-namespace', '-n', 'tty'], 'y\n');
    expect(yes.code, yes.out).toBe(0);
    expect(await keys()).toBe(0);
  });

  it('a flag that must be an integer is a usage error before any request', async () => {
    const r = await cli('lock', 'acquire', '-n', 'x', '-k', 'y', '--owner', 'me', '-t', 'ten');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--ttl must be an integer');
    expect((await api(p.url, 'GET', '/api/v1/locks/x/y')).body.data).toMatchObject({ held: false });
  });

  it('serve on a port in use says so (exit 2)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-serve-'));
    try {
      const port = new URL(p.url).port;
      const r = await parley(['serve', '--port', port, '--data-dir', dir]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('is in use');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('parley claim and lease', () => {
  it('one claim wins, the loser reads the winner; a lease lifecycle with epochs and exit 4 once lost', async () => {
    const [first, second] = await Promise.all([
      json('claim', '-n', 'cron', '-k', 'tick:2026-08-09T00:00', '-v', '{"run":"a"}'),
      json('claim', '-n', 'cron', '-k', 'tick:2026-08-09T00:00', '-v', '{"run":"b"}'),
    ]);
    expect([first.won, second.won].sort()).toEqual([false, true]);
    expect(first.value).toEqual(second.value);

    const lease = await json(
      'lease',
      'acquire',
      '-n',
      'etl',
      '-k',
      'run-9',
      '--holder',
      'w1',
      '-t',
      '120',
      '-s',
      '{"step":0}',
    );
    expect(lease).toMatchObject({ holder: 'w1', state: { step: 0 } });
    const epoch = String(lease.epoch);
    const taken = await cli('lease', 'acquire', '-n', 'etl', '-k', 'run-9', '--holder', 'w2', '-t', '120');
    expect(taken.code).toBe(4);
    const written = await json(
      'lease',
      'write',
      '-n',
      'etl',
      '-k',
      'run-9',
      '--holder',
      'w1',
      '--epoch',
      epoch,
      '-s',
      '{"step":1}',
    );
    expect(written.state).toEqual({ step: 1 });
    const stale = await cli(
      'lease',
      'renew',
      '-n',
      'etl',
      '-k',
      'run-9',
      '--holder',
      'w1',
      '--epoch',
      String(lease.epoch + 1),
    );
    expect(stale.code).toBe(4);
    expect(stale.stderr).toContain('lease_lost');
    await json(
      'lease',
      'release',
      '-n',
      'etl',
      '-k',
      'run-9',
      '--holder',
      'w1',
      '--epoch',
      epoch,
      '-s',
      '{"done":true}',
    );
    const doc = await json('lease', 'get', '-n', 'etl', '-k', 'run-9');
    expect(doc).toMatchObject({ holder: null, epoch: lease.epoch, state: { done: true } });
  });
});
