/**
 * The data directory lock: one process at a time. A second process (or a
 * second node in the same process) opening the same dataDir gets a typed
 * `DataDirLockedError` (code `unavailable`) instead of two writers on one
 * LevelDB.
 *
 * Liveness is the kernel's: the lock is an `fcntl` lock on `<dataDir>/lock/LOCK`
 * (see @parley/storage `lockDirectory`), released when the holding process
 * exits or dies. A PID is never trusted: after a container restart the node
 * is often PID 1 again, and a PID file naming it (or any reused PID) would
 * look alive. `<dataDir>/LOCK` still records the holder's PID, for the error
 * message only.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParleyError } from '@parley/interface';
import { lockDirectory, storageErrorOf } from '@parley/storage';

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

/** The file naming the holder's PID (informational). */
export const LOCK_FILE = 'LOCK';
/** The directory whose LevelDB LOCK file carries the fcntl lock. */
export const LOCK_DIR = 'lock';

function holderPid(path: string): number | null {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

/**
 * Takes the lock of `dataDir`; resolves to its release function. Throws
 * `DataDirLockedError` while another live holder has it, or a typed storage
 * error (`storage_unwritable`, `storage_full`) when the directory cannot be written.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const pidFile = join(dataDir, LOCK_FILE);
  const lock = await lockDirectory(join(dataDir, LOCK_DIR));
  if (lock === 'held') throw new DataDirLockedError(dataDir, holderPid(pidFile));
  try {
    writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 });
  } catch (err) {
    await lock.release();
    throw storageErrorOf(dataDir, err);
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    try {
      unlinkSync(pidFile);
    } catch {
      // already gone, or the directory turned read-only: the fcntl lock is what counts
    }
    await lock.release();
  };
}
