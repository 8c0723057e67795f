import {
  ClosedError,
  isParleyError,
  type ParleyError,
  StorageCorruptError,
  StorageFailedError,
  StorageFullError,
  StorageUnwritableError,
} from '@parley/interface';
import { Level } from 'level';

interface LevelishError {
  code?: unknown;
  cause?: unknown;
  message?: unknown;
}

/** errno codes (Node's fs) and strerror texts (LevelDB's "IO error: <file>: <strerror>") of a full disk. */
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);
const FULL_TEXT = /No space left on device|Disk quota exceeded/;
/** … and of a directory this process may not write. */
const UNWRITABLE_CODES = new Set(['EROFS', 'EACCES', 'EPERM']);
const UNWRITABLE_TEXT = /Read-only file system|Permission denied|Operation not permitted/;
/** Other I/O failures Node's fs reports with an errno code. */
const IO_CODES = new Set(['EIO', 'ENXIO', 'EFBIG', 'EMFILE', 'ENFILE', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP']);

/**
 * The typed error of a failure of the node's own disk: LevelDB's reports
 * (walking `cause`) and Node's fs errors. Corruption → `storage_corrupt`;
 * ENOSPC/EDQUOT → `storage_full`; EROFS/EACCES/EPERM → `storage_unwritable`;
 * any other LevelDB I/O error or fs errno → `storage_failed`; a database
 * closed under a call → `closed`. Anything else (a bug) is returned as is.
 */
export function storageErrorOf(store: string, err: unknown): unknown {
  if (isParleyError(err)) return err;
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e && typeof e === 'object'; depth++) {
    const le = e as LevelishError;
    const code = typeof le.code === 'string' ? le.code : '';
    const message = String(le.message ?? '');
    if (code === 'LEVEL_CORRUPTION') return new StorageCorruptError(store, `LevelDB reports corruption: ${message}`);
    if (FULL_CODES.has(code) || FULL_TEXT.test(message)) return new StorageFullError(store, message);
    // A recursive mkdir on a read-only filesystem reports ENOENT (Node 20).
    const mkdirFailed = code === 'ENOENT' && (le as { syscall?: unknown }).syscall === 'mkdir';
    if (UNWRITABLE_CODES.has(code) || UNWRITABLE_TEXT.test(message) || mkdirFailed) {
      return new StorageUnwritableError(store, message);
    }
    if (code === 'LEVEL_IO_ERROR' || IO_CODES.has(code)) return new StorageFailedError(store, message);
    if (code === 'LEVEL_DATABASE_NOT_OPEN' && le.cause === undefined) return new ClosedError(`storage '${store}'`);
    e = le.cause;
  }
  return err;
}

/** Throws the typed error of a LevelDB or fs failure (see storageErrorOf). */
export function mapLevelError(store: string, err: unknown): never {
  throw storageErrorOf(store, err);
}

const DISK_FAULTS = new Set<string>(['storage_full', 'storage_unwritable', 'storage_failed']);

/**
 * Remembers the first failed write of a store and refuses every later one
 * with the same code. After a failed write LevelDB cannot vouch for its log:
 * a write it accepts afterwards may be lost when the database is reopened
 * (seen on a full tmpfs: writes acknowledged after space was freed were gone
 * after a restart). Reads keep working.
 */
export class WriteFault {
  /** The first write failure, typed; undefined while the store is healthy. */
  error: ParleyError | undefined;

  constructor(private readonly store: string) {}

  /** Throws when an earlier write failed. */
  check(): void {
    const first = this.error;
    if (first === undefined) return;
    const message = `an earlier write failed (${first.message}); restart the node once the disk is fixed`;
    if (first.code === 'storage_full') throw new StorageFullError(this.store, message);
    if (first.code === 'storage_unwritable') throw new StorageUnwritableError(this.store, message);
    throw new StorageFailedError(this.store, message);
  }

  /** Types a failed write's error and, when the disk failed it (not a closed store, not a bug), records the fault. */
  fail(err: unknown): never {
    const typed = storageErrorOf(this.store, err);
    if (isParleyError(typed) && DISK_FAULTS.has(typed.code)) this.error ??= typed;
    throw typed;
  }
}

/** A LevelDB database of raw byte keys and values, as every level store here uses. */
export type LevelDb = Level<Buffer, Buffer>;

/** Opens (creating when missing) the database at `path`; failures become typed storage errors. */
export async function openLevelDb(path: string, store: string): Promise<LevelDb> {
  const db: LevelDb = new Level<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  try {
    await db.open();
  } catch (err) {
    mapLevelError(store, err);
  }
  return db;
}
