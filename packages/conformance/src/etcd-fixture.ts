/**
 * One 3-member etcd on loopback per test file (started in `beforeAll`,
 * killed in `afterAll`); each node of a test gets its own key prefix, so
 * tests never see each other's keys.
 *
 * Without an etcd binary: under `CI=true` the file FAILS (it prints
 * ETCD_MISSING and throws, CI never skips the etcd half); elsewhere it says
 * so loudly on stderr and the etcd tests are skipped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ETCD_MISSING, EtcdCluster, findEtcd } from '@parley/etcd';
import { afterAll, beforeAll } from 'vitest';

export interface EtcdFixture {
  /** False when no etcd binary was found (outside CI only; in CI the file fails instead). */
  readonly available: boolean;
  /** The running cluster (inside tests). */
  cluster(): EtcdCluster;
  /** A prefix no other node of this process has used. */
  freshPrefix(): string;
}

/** What to do when etcd is missing: throw under CI, warn loudly elsewhere. Returns the binary or undefined. */
export function requireEtcd(what: string, env: Record<string, string | undefined> = process.env): string | undefined {
  const bin = findEtcd(env.PARLEY_ETCD_BIN || undefined);
  if (bin) return bin;
  if (env.CI === 'true') {
    console.error(ETCD_MISSING);
    throw new Error(`CI=true: ${what} needs etcd and must not be skipped.\n${ETCD_MISSING}`);
  }
  console.error(`\n${'*'.repeat(78)}\n*** SKIPPING ${what}: no etcd.\n${ETCD_MISSING}\n${'*'.repeat(78)}\n`);
  return undefined;
}

let prefixes = 0;

/** Registers the file's etcd cluster (call at the top level of a test file). */
export function etcdFixture(what: string, members = 3): EtcdFixture {
  const bin = requireEtcd(what);
  let cluster: EtcdCluster | undefined;
  let dir: string | undefined;
  if (bin) {
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'parley-conformance-etcd-'));
      cluster = await EtcdCluster.start(bin, dir, { members, token: `conformance-${process.pid}` });
    }, 60_000);
    afterAll(async () => {
      await cluster?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });
  }
  return {
    available: bin !== undefined,
    cluster() {
      if (!cluster) throw new Error('the etcd cluster is not running (used outside a test?)');
      return cluster;
    },
    freshPrefix: () => `/conformance-${process.pid}-${++prefixes}`,
  };
}
