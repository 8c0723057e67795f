/**
 * `parley serve` on a data directory it cannot write: a typed storage error
 * (`storage_unwritable`) and exit code 7, not a raw EACCES stack trace. The
 * mechanism is real: a directory of another user, the child running as
 * `nobody`. (A read-only and a full filesystem at start are tested in process,
 * in packages/node/src/disk-faults.test.ts.)
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from '@parley/cli';
import { afterEach, describe, expect, it } from 'vitest';
import { PARLEY_BIN } from './http-harness.js';

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function serve(dataDir: string, uid?: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PARLEY_BIN, 'serve', '--port', '0', '--data-dir', dataDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(uid === undefined ? {} : { uid, gid: uid }),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir() },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not exit within 20 s: ${stderr}`));
    }, 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('parley serve on a data directory it cannot write', () => {
  it.skipIf(!isRoot)('another user’s directory (EACCES): storage_unwritable, exit 7', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-eacces-'));
    dirs.push(dir);
    chmodSync(dir, 0o755); // root's: `nobody` may read it, not write it
    const r = await serve(dir, NOBODY);
    expect(r.stderr).toContain('storage_unwritable');
    expect(r.stderr).not.toContain('    at '); // no stack trace
    expect(r.code).toBe(EXIT.storage);
  });
});
