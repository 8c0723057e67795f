/**
 * What the chosen nemeses and backend need from the machine, checked before a
 * run: root and iptables (owner and connmark matches) for partitions,
 * libfaketime for clock offsets, root and tmpfs mounts for disk faults, an
 * etcd binary for `--backend etcd`. A missing one drops its nemesis with a loud
 * warning — except under CI=true, where it fails the run: CI never passes by
 * skipping a fault.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unmount } from './cleanup.js';
import { findFaketime } from './clock.js';
import { mountTmpfs } from './disk.js';
import type { NemesisKind } from './nemesis/schedule.js';
import { iptablesWorks } from './partition.js';

export const INSTALL_HINT =
  'The torture harness needs, as root: iptables (partitions), libfaketime (clock offsets), tmpfs mounts (disk faults) and etcd for --backend etcd.\n' +
  'On Debian/Ubuntu: apt-get install iptables faketime etcd-server';

export interface Preflight {
  readonly nemeses: NemesisKind[];
  readonly faketimeLib: string | undefined;
  readonly etcdBin: string | undefined;
  readonly warnings: string[];
}

const isCi = (env: NodeJS.ProcessEnv) => env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';

function tmpfsWorks(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  const dir = mkdtempSync(join(tmpdir(), 'parley-torture-probe-'));
  try {
    if (!mountTmpfs(dir, 1, 0, 0)) return 'mount -t tmpfs failed';
    unmount(dir);
    return undefined;
  } finally {
    rmdirSync(dir);
  }
}

export function preflight(
  wanted: readonly NemesisKind[],
  backend: string,
  env: NodeJS.ProcessEnv = process.env,
): Preflight {
  const missing: string[] = [];
  const nemeses: NemesisKind[] = [];
  const faketimeLib = wanted.includes('clock') ? findFaketime(env) : undefined;
  let iptables: string | undefined;
  let tmpfs: string | undefined;
  if (wanted.includes('partition')) iptables = process.getuid?.() === 0 ? iptablesWorks() : 'not root';
  if (wanted.includes('disk-full') || wanted.includes('disk-ro')) tmpfs = tmpfsWorks();
  for (const k of wanted) {
    if (k === 'partition' && iptables !== undefined) missing.push(`partition: iptables unusable (${iptables})`);
    else if (k === 'clock' && faketimeLib === undefined)
      missing.push('clock: libfaketime not found (libfaketimeMT.so.1)');
    else if ((k === 'disk-full' || k === 'disk-ro') && tmpfs !== undefined)
      missing.push(`${k}: cannot mount a tmpfs (${tmpfs})`);
    else if ((k === 'disk-full' || k === 'disk-ro') && backend === 'etcd')
      missing.push(`${k}: not on the etcd backend (Parley nodes keep no strong state there)`);
    else nemeses.push(k);
  }
  let etcdBin: string | undefined;
  if (backend === 'etcd') {
    const bin = env.PARLEY_ETCD_BIN || 'etcd';
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (r.status === 0) etcdBin = bin;
    else missing.push('etcd: no etcd binary on PATH');
  }
  const warnings = missing.filter((m) => !m.includes('not on the etcd backend'));
  if (warnings.length > 0 && isCi(env)) {
    throw new Error(
      `CI=true: the torture run needs what is missing here, and must not skip it:\n  ${warnings.join('\n  ')}\n${INSTALL_HINT}`,
    );
  }
  if (backend === 'etcd' && etcdBin === undefined) throw new Error(`--backend etcd needs etcd.\n${INSTALL_HINT}`);
  return { nemeses, faketimeLib, etcdBin, warnings: missing };
}
