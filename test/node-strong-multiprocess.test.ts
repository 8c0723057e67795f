/**
 * Strong namespaces across OS processes on 127.0.0.1: three voter processes
 * (the built node, packages/node/dist/strong/peer-process.js: libp2p, LevelDB
 * with fsync) and two non-voter node processes. Clients in this process call
 * the public API through the non-voters (over IPC) in a CAS + lock + lease
 * workload; meanwhile the leader is
 * killed with SIGKILL and restarted from its data directory, then a follower.
 * Afterwards the recorded histories pass `parley-check` (parley-entry,
 * parley-lease, parley-lock models), and every acknowledged write is read
 * back. Every wait is bounded.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HistoryRecorder, type HistoryValue, toKnossosEdn } from '@parley/check';
import { isParleyError, KeyNotFoundError } from '@parley/interface';
import { loadOrCreatePrivateKey, loadOrCreatePsk, peerIdOf } from '@parley/net';
import { PeerProcess } from '@parley/node/testing';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const RAFT = { tickMs: 50, electionTimeoutTicks: 10, callTimeoutMs: 6_000, attemptTimeoutMs: 1_500 };
const WORKLOAD_MS = 9_000;

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'parley-strong-mp-'));
  dirs.push(d);
  return d;
};
const voterProcs: Array<PeerProcess | undefined> = [];
const outsiders: PeerProcess[] = [];

afterAll(async () => {
  await Promise.allSettled(voterProcs.map((p) => p?.kill()));
  await Promise.allSettled(outsiders.map((p) => p.kill()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('strong namespaces across processes', () => {
  it('CAS, locks and leases through non-voters survive kill -9 of the leader and of a follower', async () => {
    const vdirs = [tempDir(), tempDir(), tempDir()];
    const voters = await Promise.all(
      vdirs.map(async (d) => peerIdOf(await loadOrCreatePrivateKey(join(d, 'peer.key')))),
    );
    const psk = join(vdirs[0] as string, 'cluster.psk');
    await loadOrCreatePsk(psk);
    const raft = { ...RAFT, voters };
    const addresses = () => voterProcs.flatMap((p) => (p && !p.exited ? p.addresses : []));
    const startVoter = async (i: number) => {
      voterProcs[i] = await PeerProcess.start({
        dataDir: vdirs[i] as string,
        listen: ['/ip4/127.0.0.1/tcp/0'],
        bootstrap: addresses(),
        psk,
        raft,
      });
    };
    for (let i = 0; i < 3; i++) await startVoter(i);
    for (let i = 0; i < 2; i++) {
      outsiders.push(
        await PeerProcess.start({
          dataDir: tempDir(),
          listen: ['/ip4/127.0.0.1/tcp/0'],
          bootstrap: addresses(),
          psk,
          raft,
        }),
      );
    }

    // --- workload -------------------------------------------------------------------
    const rec = {
      entry: new HistoryRecorder({ maxEvents: 100_000 }),
      lease: new HistoryRecorder({ maxEvents: 100_000 }),
      lock: new HistoryRecorder({ maxEvents: 100_000 }),
    };
    const acked: Array<{ key: string; version: string }> = [];
    let okCalls = 0;
    let running = true;
    const call = async <T>(
      model: keyof typeof rec,
      p: string,
      f: string,
      key: string,
      input: HistoryValue,
      run: () => Promise<T>,
      okValue: (v: T) => HistoryValue,
      observed: Record<string, string>,
    ): Promise<T | undefined> => {
      rec[model].invoke(p, f, input, key);
      try {
        const v = await run();
        rec[model].ok(p, okValue(v));
        okCalls++;
        return v;
      } catch (err) {
        if (isParleyError(err) && observed[err.code]) rec[model].fail(p, null, { error: observed[err.code] as string });
        else if (isParleyError(err) && err.retryable) rec[model].info(p, null, { error: err.code });
        else throw err;
        return undefined;
      }
    };

    const client = async (c: number) => {
      const node = outsiders[c % 2] as PeerProcess;
      const p = `c${c}`;
      type Entry = { value: unknown; version: string };
      const kv = {
        set: (key: string, value: number, o: { ifVersion?: string } = {}) =>
          node.call<Entry>('strong', 'kv', 'set', [key, value, o]),
        get: (key: string) => node.call<Entry | null>('strong', 'kv', 'get', [key]),
      };
      let version: string | undefined;
      let lease: { leaseId: number; epoch: number } | undefined;
      let n = 0;
      while (running) {
        n++;
        const roll = n % 6;
        const key = `k${c % 2}`;
        if (roll === 0 || roll === 1) {
          const value = c * 100_000 + n;
          const r = await call(
            'entry',
            p,
            'set',
            key,
            version ? { value, ifVersion: version } : { value },
            () => kv.set(key, value, version ? { ifVersion: version } : {}),
            (v) => ({ version: v.version }),
            { version_mismatch: 'version_mismatch', key_not_found: 'version_mismatch' },
          );
          version = r?.version;
        } else if (roll === 2) {
          const e = await call(
            'entry',
            p,
            'get',
            key,
            null,
            async () => {
              const got = await kv.get(key);
              if (!got) throw new KeyNotFoundError('kv', key);
              return got;
            },
            (v) => ({ value: v.value as HistoryValue, version: v.version }),
            { key_not_found: 'key_not_found' },
          );
          version = e?.version;
        } else if (roll === 3) {
          // A write that is never overwritten: it must be readable at the end.
          const dk = `d/${p}/${n}`;
          const r = await call(
            'entry',
            p,
            'set',
            dk,
            { value: n },
            () => kv.set(dk, n),
            (v) => ({ version: v.version }),
            {},
          );
          if (r) acked.push({ key: dk, version: r.version });
        } else if (roll === 4) {
          const lk = `m${c % 2}`;
          type Grant = { namespace: string; key: string; fence: number };
          const g = await call(
            'lock',
            p,
            'acquire',
            lk,
            { owner: p },
            () => node.call<Grant>('locks', 'locks', 'acquire', [lk, { owner: p, ttl: 5 }]),
            (v) => ({ fence: v.fence }),
            { lock_held: 'lock_held' },
          );
          if (g) {
            await call(
              'lock',
              p,
              'write',
              lk,
              { fence: g.fence },
              () => node.call('strong', 'fenced', 'set', [lk, n, { fence: g }]),
              () => ({}),
              {
                fence_stale: 'fence_stale',
              },
            );
            await call(
              'lock',
              p,
              'release',
              lk,
              { owner: p, fence: g.fence },
              () => node.call<boolean>('locks', 'locks', 'release', [lk, { owner: p, fence: g.fence }]),
              (v) => ({ released: v }),
              {},
            );
          }
        } else {
          const lk = `l${c % 2}`;
          if (!lease) {
            lease = await call(
              'lease',
              p,
              'acquire',
              lk,
              { holder: p },
              () =>
                node.call<{ leaseId: number; epoch: number }>('strong', 'leases', 'lease', [lk, { ttl: 5, holder: p }]),
              (v) => ({ epoch: v.epoch }),
              { lock_held: 'lock_held' },
            );
          } else {
            const held = lease;
            await call(
              'lease',
              p,
              'release',
              lk,
              { holder: p, epoch: held.epoch },
              () => node.call('lease', '', 'release', [], held.leaseId),
              () => ({}),
              { lease_lost: 'lease_lost' },
            );
            lease = undefined;
          }
        }
      }
    };
    const clients = Array.from({ length: 4 }, (_, c) => client(c));

    // --- faults: kill -9 the leader, restart it; then a follower ----------------------------
    const leaderIndex = async (): Promise<number> => {
      for (let attempt = 0; attempt < 100; attempt++) {
        for (let i = 0; i < 3; i++) {
          const proc = voterProcs[i];
          if (!proc || proc.exited) continue;
          const st = await proc.status().catch(() => undefined);
          if (st && st.leader === st.self) return i;
        }
        await sleep(100);
      }
      throw new Error('no leader among the voter processes');
    };
    await sleep(2_000);
    const li = await leaderIndex();
    await voterProcs[li]?.kill();
    await sleep(2_500);
    await startVoter(li);
    const li2 = await leaderIndex();
    const fi = [0, 1, 2].find((i) => i !== li2) as number;
    await voterProcs[fi]?.kill();
    await sleep(1_500);
    await startVoter(fi);
    await sleep(Math.max(0, WORKLOAD_MS - 6_000));
    running = false;
    await Promise.all(clients);
    expect(okCalls).toBeGreaterThan(30);

    // --- every acknowledged write is there -------------------------------------------------
    const reader = outsiders[0] as PeerProcess;
    for (const a of acked) {
      expect((await reader.call<{ version: string } | null>('strong', 'kv', 'get', [a.key]))?.version).toBe(a.version);
    }
    expect(acked.length).toBeGreaterThan(3);

    // --- the histories pass parley-check ------------------------------------------------------
    const checkDir = tempDir();
    for (const [model, r] of Object.entries(rec)) {
      const file = join(checkDir, `${model}.edn`);
      writeFileSync(file, toKnossosEdn(r.events()));
      const out = spawnSync(
        process.execPath,
        [join(root, 'packages/check/bin/parley-check.js'), '--model', `parley-${model}`, file],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(`${model}: exit ${out.status}\n${out.stdout}${out.stderr}`).toMatch(new RegExp(`^${model}: exit 0\\n`));
    }
  }, 180_000); // seven process starts and three checker runs: minutes on a loaded 2-core machine
});
