import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from './data-dir-lock.js';
import { createNode } from './node.js';
import { silentNodeLogger } from './testing/testkit.js';

// The child takes the lock through the built package (subprocess tests use dist/: run `npx tsc -b` first).
const DIST_LOCK = fileURLToPath(new URL('../dist/data-dir-lock.js', import.meta.url));

const dirs: string[] = [];
const children: ChildProcess[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-lock-'));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A process holding the lock of `dataDir` until killed; resolves once it holds it. */
function holder(dataDir: string): Promise<ChildProcess> {
  const script = `import { lockDataDir } from ${JSON.stringify(DIST_LOCK)};
await lockDataDir(${JSON.stringify(dataDir)});
process.stdout.write('locked\\n');
setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr?.on('data', (d) => {
      err += String(d);
    });
    child.stdout?.on('data', (d) => {
      if (String(d).includes('locked')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`lock holder exited (${code}): ${err}`)));
  });
}

describe('data directory lock', () => {
  it('a LOCK file naming a live PID does not block a start: PID 1 after a container restart, or any reused PID', async () => {
    const dataDir = tempDir();
    // Left by a node that died: its PID is now this very process (as PID 1 is after every container
    // restart), then an unrelated live process.
    for (const pid of [process.pid, process.ppid]) {
      writeFileSync(join(dataDir, LOCK_FILE), `${pid}\n`);
      const node = await createNode({ dataDir, logger: silentNodeLogger });
      await node.close();
    }
  });

  it('refuses while another process holds it, and is free the moment that process is killed', async () => {
    const dataDir = tempDir();
    const child = await holder(dataDir);
    const err = await createNode({ dataDir, logger: silentNodeLogger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect(err).toMatchObject({ code: 'unavailable', details: { pid: child.pid } });
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL'); // no cleanup runs: the kernel drops the lock, the PID file stays
    await exited;
    const node = await createNode({ dataDir, logger: silentNodeLogger });
    await node.close();
  });

  it('a second holder in the same process is refused; release frees it', async () => {
    const dataDir = tempDir();
    const release = await lockDataDir(dataDir);
    await expect(lockDataDir(dataDir)).rejects.toMatchObject({ code: 'unavailable', details: { pid: process.pid } });
    await release();
    await release(); // idempotent
    const again = await lockDataDir(dataDir);
    await again();
  });
});
