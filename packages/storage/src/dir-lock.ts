/**
 * An exclusive lock on a directory that lives exactly as long as the process
 * holding it: a small LevelDB database whose own `LOCK` file LevelDB locks
 * with `fcntl(F_SETLK)`. The kernel releases the lock when the process dies
 * (SIGKILL and power loss included), so a stale lock never blocks a start,
 * and a reused PID cannot fake a live holder. A second opener in the same
 * process is refused by LevelDB's own table of held locks.
 *
 * Node 20 has no `flock`/`fcntl` binding of its own; this reuses the native
 * module the stores already load (classic-level) instead of adding one.
 */
import { Level } from 'level';
import { storageErrorOf } from './errors.js';

/** A held directory lock. */
export interface DirLock {
  /** Releases the lock (idempotent). */
  release(): Promise<void>;
}

interface LevelishError {
  code?: unknown;
  cause?: unknown;
}

function isLocked(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e && typeof e === 'object'; depth++) {
    if ((e as LevelishError).code === 'LEVEL_LOCKED') return true;
    e = (e as LevelishError).cause;
  }
  return false;
}

/**
 * Takes the lock of the directory `path` (created when missing). Resolves to
 * the lock, or to `'held'` when another holder (this process or another) has
 * it. A directory that cannot be written gives a typed storage error
 * (`storage_unwritable`, `storage_full`, `storage_failed`).
 */
export async function lockDirectory(path: string): Promise<DirLock | 'held'> {
  // A tiny database: it only ever holds the lock (no cache, the smallest write buffer).
  const db = new Level<Buffer, Buffer>(path, {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
    cacheSize: 0,
    writeBufferSize: 64 * 1024,
  });
  try {
    await db.open();
  } catch (err) {
    if (isLocked(err)) return 'held';
    throw storageErrorOf(path, err);
  }
  let released: Promise<void> | undefined;
  return {
    release() {
      released ??= db.close();
      return released;
    },
  };
}
