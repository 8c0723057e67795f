/**
 * KVStorage on LevelDB (`classic-level` through `level`).
 *
 * Keys are string arrays encoded by `encodeKey` (order- and prefix-preserving);
 * each value is a checksummed record over its key and bytes. With `sync: true`
 * (the default) every write is fsynced before its promise resolves.
 *
 * Disk failures are typed (`storage_full`, `storage_unwritable`,
 * `storage_failed`, `storage_corrupt`), and after the first failed write every
 * later write is refused with the same code until the store is reopened.
 */
import {
  ClosedError,
  InvalidArgumentError,
  type KVStorage,
  type StorageChunk,
  type StorageKey,
  type StorageOp,
} from '@parley/interface';
import { ByteArena } from './arena.js';
import { type LevelDb, mapLevelError, openLevelDb, WriteFault } from './errors.js';
import { decodeKey, encodeKey, KeyRunDecoder, prefixUpperBound } from './key-codec.js';
import { allocRecord, bytesView, openRecord, RECORD_HEADER_BYTES, sealRecord } from './record.js';

export interface LevelKVOptions {
  /** Directory of the LevelDB database; created when missing. */
  path: string;
  /** fsync every write before it resolves (default true). */
  sync?: boolean;
  /** Name used in errors (default: the path). */
  name?: string;
  /** Read and check every record once while opening (default false: records are checked whenever read). */
  verifyOnOpen?: boolean;
}

/** Largest number of deletions `removeRange` writes in one atomic batch. */
export const REMOVE_RANGE_CHUNK_KEYS = 10_000;

const LOAD_RANGE_STEP = 4_096;

type Db = LevelDb;

function assertData(data: unknown): asserts data is Uint8Array {
  if (!(data instanceof Uint8Array)) throw new InvalidArgumentError('storage value must be a Uint8Array');
}

function encodeValue(key: Buffer, data: Uint8Array): Buffer {
  const rec = allocRecord(data.length);
  rec.set(data, RECORD_HEADER_BYTES);
  return sealRecord(key, rec);
}

export class LevelKVStorage implements KVStorage {
  readonly name: string;
  private closed = false;
  /** The first failed write: later writes are refused with its code (see WriteFault). */
  readonly fault: WriteFault;

  private constructor(
    private readonly db: Db,
    private readonly sync: boolean,
    name: string,
  ) {
    this.name = name;
    this.fault = new WriteFault(name);
  }

  /** Opens (creating when missing) the database at `options.path`. */
  static async open(options: LevelKVOptions): Promise<LevelKVStorage> {
    const name = options.name ?? options.path;
    const db = await openLevelDb(options.path, name);
    const store = new LevelKVStorage(db, options.sync ?? true, name);
    if (options.verifyOnOpen) {
      try {
        await store.verify();
      } catch (err) {
        await db.close();
        throw err;
      }
    }
    return store;
  }

  private check(): void {
    if (this.closed) throw new ClosedError(`storage '${this.name}'`);
  }

  private checkWrite(): void {
    this.check();
    this.fault.check();
  }

  private decode(key: Buffer, value: Buffer): Uint8Array {
    const rec = openRecord(this.name, key, value, describeKey);
    return bytesView(rec, RECORD_HEADER_BYTES);
  }

  async load(key: StorageKey): Promise<Uint8Array | undefined> {
    this.check();
    const k = encodeKey(key);
    let v: Buffer | undefined;
    try {
      v = await this.db.get(k);
    } catch (err) {
      mapLevelError(this.name, err);
    }
    return v === undefined ? undefined : this.decode(k, v);
  }

  async save(key: StorageKey, data: Uint8Array): Promise<void> {
    this.checkWrite();
    assertData(data);
    const k = encodeKey(key);
    try {
      await this.db.put(k, encodeValue(k, data), { sync: this.sync });
    } catch (err) {
      this.fault.fail(err);
    }
  }

  async remove(key: StorageKey): Promise<void> {
    this.checkWrite();
    const k = encodeKey(key);
    try {
      await this.db.del(k, { sync: this.sync });
    } catch (err) {
      this.fault.fail(err);
    }
  }

  async loadRange(prefix: StorageKey): Promise<StorageChunk[]> {
    this.check();
    const out: StorageChunk[] = [];
    // Values are copied into shared chunks and keys share their common leading strings: a large range then
    // costs a few big allocations instead of one buffer per value and one string per element.
    const keys = new KeyRunDecoder();
    const arena = new ByteArena();
    await this.scan(prefix, (key, value) => {
      const rec = openRecord(this.name, key, value, describeKey);
      out.push({ key: keys.decode(key), data: arena.copy(rec, RECORD_HEADER_BYTES) });
    });
    return out;
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    this.checkWrite();
    const range = rangeOf(prefix);
    // Deletes go in atomic chunks; a crash part-way leaves a subset of the range removed.
    for (;;) {
      let keys: Buffer[];
      try {
        keys = await this.db.keys({ ...range, limit: REMOVE_RANGE_CHUNK_KEYS }).all();
      } catch (err) {
        mapLevelError(this.name, err);
      }
      if (keys.length === 0) return;
      try {
        await this.db.batch(
          keys.map((key) => ({ type: 'del' as const, key })),
          { sync: this.sync },
        );
      } catch (err) {
        this.fault.fail(err);
      }
      if (keys.length < REMOVE_RANGE_CHUNK_KEYS) return;
    }
  }

  async batch(ops: readonly StorageOp[]): Promise<void> {
    this.checkWrite();
    if (ops.length === 0) return;
    const encoded = ops.map((op) => {
      const key = encodeKey(op.key);
      if (op.type === 'put') {
        assertData(op.data);
        return { type: 'put' as const, key, value: encodeValue(key, op.data) };
      }
      if (op.type === 'del') return { type: 'del' as const, key };
      throw new InvalidArgumentError(`unknown storage op type '${(op as { type: unknown }).type}'`);
    });
    try {
      await this.db.batch(encoded, { sync: this.sync });
    } catch (err) {
      this.fault.fail(err);
    }
  }

  /** Reads every record and checks its checksum; throws StorageCorruptError on the first bad one. */
  async verify(): Promise<number> {
    this.check();
    let count = 0;
    await this.scan([], (key, value) => {
      decodeKey(key);
      this.decode(key, value);
      count++;
    });
    return count;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }

  private async scan(prefix: StorageKey, visit: (key: Buffer, value: Buffer) => void): Promise<void> {
    const it = this.db.iterator(rangeOf(prefix));
    try {
      // Ask LevelDB for the next step before visiting this one, so reading and decoding overlap.
      let step = await it.nextv(LOAD_RANGE_STEP);
      while (step.length > 0) {
        const next = it.nextv(LOAD_RANGE_STEP);
        next.catch(() => undefined);
        for (let i = 0; i < step.length; i++) {
          const pair = step[i]!;
          visit(pair[0], pair[1]);
        }
        step = await next;
      }
    } catch (err) {
      mapLevelError(this.name, err);
    } finally {
      await it.close();
    }
  }
}

function rangeOf(prefix: StorageKey): { gte?: Buffer; lt?: Buffer } {
  const p = encodeKey(prefix, true);
  return p.length === 0 ? {} : { gte: p, lt: prefixUpperBound(p) };
}

function describeKey(key: Uint8Array): string {
  try {
    return `key ${JSON.stringify(decodeKey(key))}`;
  } catch {
    return `key 0x${Buffer.from(key).toString('hex')}`;
  }
}

/** Opens a LevelDB-backed KVStorage. */
export function openLevelKV(options: LevelKVOptions): Promise<LevelKVStorage> {
  return LevelKVStorage.open(options);
}
