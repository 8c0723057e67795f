import { StorageCorruptError } from '@parley/interface';
import { Level } from 'level';

interface LevelishError {
  code?: unknown;
  cause?: unknown;
  message?: unknown;
}

/** Turns LevelDB's own corruption reports into StorageCorruptError naming the store; rethrows the rest. */
export function mapLevelError(store: string, err: unknown): never {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e && typeof e === 'object'; depth++) {
    const le = e as LevelishError;
    if (le.code === 'LEVEL_CORRUPTION') {
      throw new StorageCorruptError(store, `LevelDB reports corruption: ${String(le.message)}`);
    }
    e = le.cause;
  }
  throw err;
}

/** A LevelDB database of raw byte keys and values, as every level store here uses. */
export type LevelDb = Level<Buffer, Buffer>;

/** Opens (creating when missing) the database at `path`; LevelDB's corruption reports become StorageCorruptError. */
export async function openLevelDb(path: string, store: string): Promise<LevelDb> {
  const db: LevelDb = new Level<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  try {
    await db.open();
  } catch (err) {
    mapLevelError(store, err);
  }
  return db;
}
