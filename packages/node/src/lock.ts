/**
 * The data directory lock: one process at a time. A second process (or a
 * second node in the same process) opening the same dataDir gets a typed
 * `DataDirLockedError` (code `unavailable`) instead of two writers on one
 * LevelDB. A lock left by a process that no longer runs is taken over.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ParleyError } from '@parley/interface';

export class DataDirLockedError extends ParleyError {
  constructor(dataDir: string, pid: number | null) {
    super(
      'unavailable',
      `data directory '${dataDir}' is in use by ${pid === null ? 'another node' : `process ${pid}`}`,
      {
        dataDir,
        pid,
      },
    );
  }
}

export const LOCK_FILE = 'LOCK';

const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock of `dataDir`; returns its release function. */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  if (held.has(path)) throw new DataDirLockedError(dataDir, process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      held.add(path);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held.delete(path);
        try {
          unlinkSync(path);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let pid: number | null = null;
    try {
      const text = readFileSync(path, 'utf8').trim();
      pid = /^\d+$/.test(text) ? Number(text) : null;
    } catch {
      continue; // removed meanwhile: try again
    }
    if (pid !== null && pid !== process.pid && alive(pid)) throw new DataDirLockedError(dataDir, pid);
    if (pid === process.pid) throw new DataDirLockedError(dataDir, pid);
    // A stale lock (its process is gone, or the file is unreadable): take it over.
    try {
      unlinkSync(path);
    } catch {
      // raced with another process: the next attempt decides
    }
  }
  throw new DataDirLockedError(dataDir, null);
}
