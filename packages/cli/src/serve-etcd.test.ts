/**
 * `parley serve --etcd …`: the flags, and the real binary serving strong
 * state from a 3-member loopback etcd over HTTP. Without etcd: the process
 * test fails under CI=true, and elsewhere says so loudly and skips.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ETCD_MISSING, EtcdBackend, EtcdCluster, findEtcd } from '@parley/etcd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etcdOptions } from './commands/serve.js';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'parley.js');

describe('parley serve --etcd flags', () => {
  it('turn into etcdStrong options, and refuse what cannot work', () => {
    expect(etcdOptions({})).toBeUndefined();
    expect(etcdOptions({ etcd: 'http://127.0.0.1:2379, http://127.0.0.1:2380' })).toEqual({
      endpoints: ['http://127.0.0.1:2379', 'http://127.0.0.1:2380'],
    });
    expect(etcdOptions({ etcd: 'http://h:1', etcdPrefix: '/team-a' })).toEqual({
      endpoints: ['http://h:1'],
      prefix: '/team-a',
    });
    expect(() => etcdOptions({ etcdPrefix: '/x' })).toThrow('--etcd-prefix needs --etcd');
    expect(() => etcdOptions({ etcd: ' , ' })).toThrow('at least one client URL');
    // host:port means http, as for --endpoint; anything else is a usage error naming the flag.
    expect(etcdOptions({ etcd: 'localhost:2379,127.0.0.1:2380' })).toEqual({
      endpoints: ['http://localhost:2379', 'http://127.0.0.1:2380'],
    });
    expect(() => etcdOptions({ etcd: 'http://h:1/v3' })).toThrow('is not an http(s)://host:port URL');
    expect(() => etcdOptions({ etcd: 'ftp://h:1' })).toThrow('--etcd');
    expect(() => etcdOptions({ etcd: 'not a url' })).toThrow('--etcd');
    expect(() => etcdOptions({ etcd: 'http://h:1', etcdPrefix: '/x/' })).toThrow('must be non-empty');
    expect(() => etcdOptions({ etcd: 'http://h:1', voters: 'a' })).toThrow('not with --etcd');
  });
});

const bin = findEtcd();
if (!bin) {
  if (process.env.CI === 'true') throw new Error(`CI needs etcd for parley serve --etcd.\n${ETCD_MISSING}`);
  console.error(`\n*** SKIPPING the parley serve --etcd test: ${ETCD_MISSING}\n`);
}

describe.skipIf(!bin)('parley serve --etcd (real processes)', () => {
  let cluster: EtcdCluster;
  let dir: string;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-serve-etcd-'));
    cluster = await EtcdCluster.start(bin as string, join(dir, 'etcd'));
  }, 60_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child?.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves strong state, CAS and errors from etcd over HTTP', async () => {
    child = spawn(
      process.execPath,
      [
        BIN,
        '--output',
        'json',
        'serve',
        '--port',
        '0',
        '-d',
        join(dir, 'node'),
        '--etcd',
        cluster.endpoints.join(','),
        '--etcd-prefix',
        '/serve-test',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const proc = child;
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('parley serve printed nothing in 20 s')), 20_000);
      createInterface({ input: proc.stdout as NodeJS.ReadableStream }).once('line', (l) => {
        clearTimeout(timer);
        resolve(l);
      });
      proc.once('exit', (code) => reject(new Error(`parley serve exited with ${code}`)));
    });
    const started = JSON.parse(line) as { url: string; strong: string };
    expect(started.strong).toBe('etcd');
    const url = `${started.url}/api/v1/distributed-state/docs4-deploy/status`;
    const post = (body: unknown) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const created = await post({ value: { phase: 'deploying' }, ttl_seconds: 600 });
    expect(created.status).toBe(201);
    const entry = ((await created.json()) as { data: { version: string } }).data;
    const got = await fetch(url);
    expect(got.status).toBe(200);
    expect(((await got.json()) as { data: { value: unknown } }).data.value).toEqual({ phase: 'deploying' });
    const stale = await post({ value: 1, if_version_matches: 'stale-version-00' });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { error: string }).error).toBe('version_mismatch');
    const cas = await post({ value: { phase: 'done' }, if_version_matches: entry.version });
    expect(cas.status).toBe(200);
    // The state is in etcd, under the prefix: another backend on the same prefix reads it.
    const direct = new EtcdBackend({ endpoints: cluster.endpoints, prefix: '/serve-test' });
    try {
      const r = await direct.read({ type: 'get', namespace: 'docs4-deploy', key: 'status' });
      expect(r).toMatchObject({ type: 'got', entry: { value: { phase: 'done' } } });
    } finally {
      await direct.close();
    }
  }, 60_000);
});
