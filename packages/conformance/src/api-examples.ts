/**
 * The HTTP API and CLI contract, example by example, against `parley serve` on
 * a backend: every example of the requirements page it comes from (seed 000) (`parley` for `snug`, PARLEY_API_TOKEN for SNUG_API_TOKEN), over real
 * HTTP and through the real `parley` binary, then the lock lifecycle
 * (blocking wait, fencing, TTL auto-release when the holder dies).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendUnderTest } from './backends.js';
import { api, eventually, ISO_MICROS, parley, type Served, serveParley } from './http.js';

const TOKEN = 'seed-000-token';

/** Registers the API examples against `parley serve` over `backend`. */
export function apiExamplesSuite(backend: () => BackendUnderTest): void {
  let p: Served;
  let env: Record<string, string>;
  const cli = (...args: string[]) => parley(args, env);

  beforeAll(async () => {
    const b = backend();
    p = await serveParley(b.serveArgs(), TOKEN);
    env = { PARLEY_API_TOKEN: TOKEN, PARLEY_ENDPOINT: p.url };
    expect(p.strong).toBe(b.kind);
  }, 60_000);
  afterAll(async () => {
    await p?.close();
  });

  describe('seed 000: store and read', () => {
    it('set, get --output json, delete through the CLI', async () => {
      const set = await cli(
        'distributed-state',
        'set',
        '-n',
        'docs4-config',
        '-k',
        'feature-flag',
        '-v',
        '{"enabled":true,"rollout":25}',
        '-t',
        '3600',
      );
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout).toMatch(/^created docs4-config\/feature-flag version \S+/);

      const get = await cli('--output', 'json', 'distributed-state', 'get', '-n', 'docs4-config', '-k', 'feature-flag');
      expect(get.code, get.stderr).toBe(0);
      const entry = JSON.parse(get.stdout);
      expect(entry).toMatchObject({
        namespace: 'docs4-config',
        key: 'feature-flag',
        value: { enabled: true, rollout: 25 },
        ttl_seconds: 3600,
      });
      expect(entry.version).toEqual(expect.any(String));

      const del = await cli('distributed-state', 'delete', '-n', 'docs4-config', '-k', 'feature-flag');
      expect(del.code, del.stderr).toBe(0);
      const gone = await cli('distributed-state', 'get', '-n', 'docs4-config', '-k', 'feature-flag');
      expect(gone.code).toBe(3);
      expect(gone.stderr).toContain('404 key_not_found');
    });

    it('the curl POST answers 201 Created with the entry, as printed', async () => {
      const res = await api(p.url, 'POST', '/api/v1/distributed-state/docs4-deploy/status', {
        token: TOKEN,
        headers: { 'Content-Type': 'application/json' },
        body: '{"value": {"phase": "deploying"}, "ttl_seconds": 600}',
      });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(['data', 'msg', 'status']);
      expect(res.body.status).toBe(201);
      expect(res.body.msg).toBe('Created');
      const data = res.body.data as Record<string, unknown>;
      expect(data).toMatchObject({
        namespace: 'docs4-deploy',
        key: 'status',
        value: { phase: 'deploying' },
        ttl_seconds: 600,
        operation: 'created',
      });
      expect(data.version).toMatch(/^\S+$/);
      expect(data.created_at).toMatch(ISO_MICROS);
      expect(data.updated_at).toBe(data.created_at);
      const expires = Date.parse(data.expires_at as string) - Date.parse(data.created_at as string);
      expect(expires).toBe(600_000);

      const again = await api(p.url, 'POST', '/api/v1/distributed-state/docs4-deploy/status', {
        token: TOKEN,
        body: { value: { phase: 'done' } },
      });
      expect(again.status).toBe(200);
      expect(again.body.msg).toBe('OK');
      expect(again.body.data).toMatchObject({ operation: 'updated', ttl_seconds: 3600 });
    });

    it('the token is required: 401 with the envelope, nothing written', async () => {
      const missing = await api(p.url, 'POST', '/api/v1/distributed-state/docs4-deploy/intruder', {
        body: { value: 1 },
      });
      expect(missing.status).toBe(401);
      expect(missing.body).toEqual({ status: 401, msg: expect.any(String), error: 'unauthorized' });
      const wrong = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-deploy/status', { token: 'nope' });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error).toBe('unauthorized');
      const cliWrong = await parley(['distributed-state', 'get', '-n', 'docs4-deploy', '-k', 'status'], {
        PARLEY_ENDPOINT: p.url,
        PARLEY_API_TOKEN: 'nope',
      });
      expect(cliWrong.code).toBe(5);
      const check = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-deploy/intruder', { token: TOKEN });
      expect(check.status).toBe(404);
    });
  });

  describe('seed 000: compare-and-swap', () => {
    it('two writes with the same token: the second is rejected with the seed message', async () => {
      await cli('distributed-state', 'set', '-n', 'docs4-config', '-k', 'feature-flag', '-v', '{"enabled":true}');
      const read = await cli(
        '--output',
        'json',
        'distributed-state',
        'get',
        '-n',
        'docs4-config',
        '-k',
        'feature-flag',
      );
      const token = JSON.parse(read.stdout).version as string;

      const first = await cli(
        ...['distributed-state', 'set', '-n', 'docs4-config', '-k', 'feature-flag'],
        ...['-v', '{"enabled":true,"rollout":50}', '--if-version', token],
      );
      expect(first.code, first.stderr).toBe(0);
      const afterRead = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-config/feature-flag', {
        token: TOKEN,
      });
      const after = afterRead.body.data as { version: string; value: unknown };
      expect(after.version).not.toBe(token);
      expect(after.value).toEqual({ enabled: true, rollout: 50 });

      const stale = await cli(
        ...['--output', 'json', 'distributed-state', 'set', '-n', 'docs4-config', '-k', 'feature-flag'],
        ...['-v', '{"enabled":true,"rollout":75}', '--if-version', token],
      );
      expect(stale.code).toBe(4);
      expect(JSON.parse(stale.stderr)).toEqual({
        status: 409,
        msg: `Version mismatch for key docs4-config/feature-flag: expected ${token}, got ${after.version}`,
        error: 'version_mismatch',
      });

      const http = await api(p.url, 'POST', '/api/v1/distributed-state/docs4-config/feature-flag', {
        token: TOKEN,
        body: { value: { enabled: true, rollout: 75 }, if_version_matches: token },
      });
      expect(http.status).toBe(409);
      expect(http.body).toEqual({
        status: 409,
        msg: `Version mismatch for key docs4-config/feature-flag: expected ${token}, got ${after.version}`,
        error: 'version_mismatch',
      });
      const unchanged = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-config/feature-flag', {
        token: TOKEN,
      });
      expect((unchanged.body.data as { value: unknown }).value).toEqual({ enabled: true, rollout: 50 });
    });

    it('create-only: the losing racer gets 409 key_already_exists', async () => {
      const racers = await Promise.all(
        [1, 2, 3].map((n) =>
          api(p.url, 'POST', '/api/v1/distributed-state/docs4-init/schema', {
            token: TOKEN,
            body: { value: { by: n }, if_not_exists: true },
          }),
        ),
      );
      expect(racers.filter((r) => r.status === 201)).toHaveLength(1);
      const losers = racers.filter((r) => r.status !== 201);
      expect(losers.map((r) => r.body.error)).toEqual(['key_already_exists', 'key_already_exists']);
      const cliLoser = await cli(
        'distributed-state',
        'set',
        '-n',
        'docs4-init',
        '-k',
        'schema',
        '-v',
        '1',
        '--if-not-exists',
      );
      expect(cliLoser.code).toBe(4);
      expect(cliLoser.stderr).toContain('409 key_already_exists');
    });
  });

  describe('seed 000: TTL', () => {
    it('default 3600 s in the write response; -t 1 expires and reads as 404 key_not_found', async () => {
      const dflt = await cli(
        '--output',
        'json',
        'distributed-state',
        'set',
        '-n',
        'docs4-config',
        '-k',
        'defaulted',
        '-v',
        '1',
      );
      expect(JSON.parse(dflt.stdout).ttl_seconds).toBe(3600);
      await api(p.url, 'DELETE', '/api/v1/distributed-state/docs4-config/defaulted', { token: TOKEN });

      const set = await cli(
        ...['--output', 'json', 'distributed-state', 'set', '-n', 'docs4-config', '-k', 'ephemeral'],
        ...['-v', '"soon gone"', '-t', '1'],
      );
      expect(set.code, set.stderr).toBe(0);
      const written = JSON.parse(set.stdout);
      expect(written.ttl_seconds).toBe(1);
      expect(Date.parse(written.expires_at) - Date.parse(written.updated_at)).toBe(1000);
      const path = '/api/v1/distributed-state/docs4-config/ephemeral';
      const read = await api(p.url, 'GET', path, { token: TOKEN });
      // Read right after the write: still there, unless this machine stalled for the whole second.
      if (read.status === 200) expect((read.body.data as { value: unknown }).value).toBe('soon gone');
      await eventually(async () => (await api(p.url, 'GET', path, { token: TOKEN })).status === 404, 10_000);
      const gone = await cli('distributed-state', 'get', '-n', 'docs4-config', '-k', 'ephemeral');
      expect(gone.code).toBe(3);
      expect(gone.stderr).toContain('404 key_not_found');
    });
  });

  describe('seed 000: listing and deleting a namespace', () => {
    it('list returns full entries; -q matches a key; delete-namespace --confirm reports the count', async () => {
      await api(p.url, 'POST', '/api/v1/distributed-state/docs4-config/replica-count', {
        token: TOKEN,
        body: { value: 3 },
      });
      const list = await cli('--output', 'json', 'distributed-state', 'list', '-n', 'docs4-config', '-l', '20');
      expect(list.code, list.stderr).toBe(0);
      const page = JSON.parse(list.stdout);
      expect(page.items.map((e: { key: string }) => e.key).sort()).toEqual(['feature-flag', 'replica-count']);
      expect(page.items[0]).toHaveProperty('value');
      expect(page.next_cursor).toBeNull();

      const q = await cli('distributed-state', 'list', '-n', 'docs4-config', '-q', 'replica');
      expect(q.code, q.stderr).toBe(0);
      expect(q.stdout).toContain('replica-count');
      expect(q.stdout).not.toContain('feature-flag');

      const refused = await api(p.url, 'DELETE', '/api/v1/distributed-state/docs4-config', { token: TOKEN });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_argument');
      const noConfirm = await cli('distributed-state', 'delete-namespace', '-n', 'docs4-config');
      expect(noConfirm.code).toBe(2); // stdin is not a terminal: no one to ask
      const still = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-config', { token: TOKEN });
      expect((still.body.data as { items: unknown[] }).items).toHaveLength(2);

      const del = await cli(
        '--output',
        'json',
        'distributed-state',
        'delete-namespace',
        '-n',
        'docs4-config',
        '--confirm',
      );
      expect(del.code, del.stderr).toBe(0);
      expect(JSON.parse(del.stdout)).toEqual({ deleted_count: 2, namespace: 'docs4-config', pattern_used: '*' });
    });

    it('a pattern limits which keys die', async () => {
      for (const key of ['job-a', 'job-b', 'keep']) {
        await api(p.url, 'POST', `/api/v1/distributed-state/docs4-jobs/${key}`, { token: TOKEN, body: { value: key } });
      }
      const res = await api(p.url, 'DELETE', '/api/v1/distributed-state/docs4-jobs?confirm=true&pattern=job-*', {
        token: TOKEN,
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ deleted_count: 2, namespace: 'docs4-jobs', pattern_used: 'job-*' });
      const left = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-jobs', { token: TOKEN });
      expect((left.body.data as { items: Array<{ key: string }> }).items.map((e) => e.key)).toEqual(['keep']);
    });
  });

  describe('locks: blocking wait, fencing, TTL auto-release', () => {
    const lockPath = '/api/v1/locks/docs4-deploy/rollout';

    it('a waiter is granted a higher fence on release; the stale fence is refused by state writes', async () => {
      const a = await api(p.url, 'POST', lockPath, { token: TOKEN, body: { owner: 'worker-a', ttl_seconds: 30 } });
      expect(a.status).toBe(200);
      const fenceA = (a.body.data as { fence: number }).fence;
      expect(fenceA).toBeGreaterThan(0);

      const held = await api(p.url, 'POST', lockPath, { token: TOKEN, body: { owner: 'worker-b' } });
      expect(held.status).toBe(409);
      expect(held.body.error).toBe('lock_held');

      const write = await api(p.url, 'POST', '/api/v1/distributed-state/docs4-deploy/rollout', {
        token: TOKEN,
        body: { value: { step: 1 }, fence: fenceA },
      });
      expect(write.status).toBe(201);

      // worker-b waits in the queue; worker-a releases; worker-b is granted.
      const waiting = api(p.url, 'POST', lockPath, {
        token: TOKEN,
        body: { owner: 'worker-b', ttl_seconds: 30, wait_seconds: 20 },
      });
      await eventually(async () => {
        const info = await api(p.url, 'GET', lockPath, { token: TOKEN });
        return (info.body.data as { waiters: number }).waiters === 1;
      }, 10_000);
      const release = await api(p.url, 'POST', `${lockPath}/release`, {
        token: TOKEN,
        body: { owner: 'worker-a', fence: fenceA },
      });
      expect(release.body.data).toMatchObject({ released: true });
      const b = await waiting;
      expect(b.status).toBe(200);
      const fenceB = (b.body.data as { fence: number; owner: string }).fence;
      expect(fenceB).toBeGreaterThan(fenceA);

      const stale = await api(p.url, 'POST', '/api/v1/distributed-state/docs4-deploy/rollout', {
        token: TOKEN,
        body: { value: { step: 'late' }, fence: fenceA },
      });
      expect(stale.status).toBe(409);
      expect(stale.body.error).toBe('fence_stale');
      const value = await api(p.url, 'GET', '/api/v1/distributed-state/docs4-deploy/rollout', { token: TOKEN });
      expect((value.body.data as { value: unknown }).value).toEqual({ step: 1 });

      const renew = await api(p.url, 'POST', `${lockPath}/renew`, {
        token: TOKEN,
        body: { owner: 'worker-b', fence: fenceB, ttl_seconds: 60 },
      });
      expect(renew.status).toBe(200);
      expect((renew.body.data as { ttl_seconds: number }).ttl_seconds).toBe(60);
      await api(p.url, 'POST', `${lockPath}/release`, { token: TOKEN, body: { owner: 'worker-b', fence: fenceB } });
    });

    it('a holder that dies (never renews) loses the lock at its TTL; a waiter gets it', async () => {
      const path = '/api/v1/locks/docs4-cron/nightly';
      const dead = await api(p.url, 'POST', path, { token: TOKEN, body: { owner: 'crashed', ttl_seconds: 1 } });
      expect(dead.status).toBe(200);
      const deadFence = (dead.body.data as { fence: number }).fence;
      const started = Date.now();
      const next = await api(p.url, 'POST', path, {
        token: TOKEN,
        body: { owner: 'survivor', ttl_seconds: 30, wait_seconds: 15 },
      });
      expect(next.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect((next.body.data as { owner: string; fence: number }).owner).toBe('survivor');
      expect((next.body.data as { fence: number }).fence).toBeGreaterThan(deadFence);
      const info = await api(p.url, 'GET', path, { token: TOKEN });
      expect(info.body.data).toMatchObject({ held: true, holder: { owner: 'survivor' } });
    });

    it('the CLI speaks the lock lifecycle with exit codes', async () => {
      const acquire = await cli(
        '--output',
        'json',
        'lock',
        'acquire',
        '-n',
        'docs4-cli',
        '-k',
        'l',
        '-o',
        'me',
        '-t',
        '30',
      );
      expect(acquire.code, acquire.stderr).toBe(0);
      const grant = JSON.parse(acquire.stdout);
      expect(grant).toMatchObject({ namespace: 'docs4-cli', key: 'l', owner: 'me', ttl_seconds: 30 });
      const other = await cli('lock', 'acquire', '-n', 'docs4-cli', '-k', 'l', '-o', 'you');
      expect(other.code).toBe(4);
      const inspect = await cli('--output', 'json', 'lock', 'inspect', '-n', 'docs4-cli', '-k', 'l');
      expect(JSON.parse(inspect.stdout)).toMatchObject({ held: true, last_fence: grant.fence, waiters: 0 });
      const renew = await cli('lock', 'renew', '-n', 'docs4-cli', '-k', 'l', '-o', 'me', '-f', String(grant.fence));
      expect(renew.code, renew.stderr).toBe(0);
      // Someone who does not hold it: renew and release both say who does (exit 4), and change nothing.
      const fence = String(grant.fence);
      const [theirRenew, theirRelease] = await Promise.all([
        cli('lock', 'renew', '-n', 'docs4-cli', '-k', 'l', '-o', 'you', '-f', fence),
        cli('lock', 'release', '-n', 'docs4-cli', '-k', 'l', '-o', 'you', '-f', fence),
      ]);
      expect(theirRenew.code).toBe(4);
      expect(theirRenew.stderr).toMatch(/409 lock_held: lock 'docs4-cli\/l' is held by 'me'/);
      expect(theirRelease.code).toBe(4);
      expect(theirRelease.stderr).toMatch(/lock_held: lock 'docs4-cli\/l' is held by 'me'.*nothing was released/);
      const release = await cli('lock', 'release', '-n', 'docs4-cli', '-k', 'l', '-o', 'me', '-f', String(grant.fence));
      expect(release.code, release.stderr).toBe(0);
      expect(release.stdout).toContain('released docs4-cli/l');
      // The grant has ended: renewing or releasing it again says so (exit 4, lease_lost).
      const [again, twice] = await Promise.all([
        cli('lock', 'renew', '-n', 'docs4-cli', '-k', 'l', '-o', 'me', '-f', fence),
        cli('--output', 'json', 'lock', 'release', '-n', 'docs4-cli', '-k', 'l', '-o', 'me', '-f', fence),
      ]);
      expect(again.code).toBe(4);
      expect(again.stderr).toMatch(/409 lease_lost: lock 'docs4-cli\/l': the grant of fence \d+ to 'me' has ended/);
      expect(twice.code).toBe(4);
      expect(JSON.parse(twice.stderr)).toMatchObject({ error: 'lease_lost' });
    });
  });
}
