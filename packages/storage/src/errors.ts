import { StorageCorruptError } from '@parley/interface';

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
