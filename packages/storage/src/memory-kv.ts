/**
 * KVStorage in memory: the twin of the level store for tests and ephemeral
 * nodes. Its "disk" is a `MemoryKVDisk` object: reopening a store on the same
 * disk sees everything written before, as after a restart. Writes apply
 * atomically when called, so a crash leaves each batch entirely applied or not
 * at all.
 */
import {
  ClosedError,
  InvalidArgumentError,
  type KVStorage,
  type StorageChunk,
  type StorageKey,
  type StorageOp,
  UnavailableError,
} from '@parley/interface';
import { decodeKey, encodeKey } from './key-codec.js';

/** The persistent contents a memory store lives on; survives close and crash. */
export class MemoryKVDisk {
  /** Encoded key (as a latin1 string, so string order is byte order) → value. */
  readonly records = new Map<string, Uint8Array>();
  private sortedKeys: string[] | undefined;
  /** @internal the store currently open on this disk */
  holder: object | undefined;

  /** Keys in byte order; rebuilt lazily after an insertion. */
  sorted(): string[] {
    if (!this.sortedKeys) this.sortedKeys = [...this.records.keys()].sort();
    return this.sortedKeys;
  }

  set(key: string, value: Uint8Array): void {
    if (!this.records.has(key)) this.sortedKeys = undefined;
    this.records.set(key, value);
  }

  delete(key: string): void {
    if (this.records.delete(key)) this.sortedKeys = undefined;
  }

  get size(): number {
    return this.records.size;
  }
}

export interface MemoryKVOptions {
  /** The disk to open; a fresh one when omitted. */
  disk?: MemoryKVDisk;
  /** Name used in errors (default 'memory'). */
  name?: string;
}

function keyString(key: StorageKey, prefix = false): string {
  return encodeKey(key, prefix).toString('latin1');
}

function assertData(data: unknown): asserts data is Uint8Array {
  if (!(data instanceof Uint8Array)) throw new InvalidArgumentError('storage value must be a Uint8Array');
}

/** First index in sorted `keys` whose value is ≥ `target`. */
function lowerBound(keys: readonly string[], target: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class MemoryKVStorage implements KVStorage {
  readonly name: string;
  readonly disk: MemoryKVDisk;
  private closed = false;

  constructor(options: MemoryKVOptions = {}) {
    this.disk = options.disk ?? new MemoryKVDisk();
    this.name = options.name ?? 'memory';
    if (this.disk.holder) throw new UnavailableError(`storage '${this.name}' is already open`);
    this.disk.holder = this;
  }

  private check(): void {
    if (this.closed) throw new ClosedError(`storage '${this.name}'`);
  }

  async load(key: StorageKey): Promise<Uint8Array | undefined> {
    this.check();
    const v = this.disk.records.get(keyString(key));
    return v === undefined ? undefined : v.slice();
  }

  async save(key: StorageKey, data: Uint8Array): Promise<void> {
    this.check();
    assertData(data);
    this.disk.set(keyString(key), data.slice());
  }

  async remove(key: StorageKey): Promise<void> {
    this.check();
    this.disk.delete(keyString(key));
  }

  private rangeKeys(prefix: StorageKey): string[] {
    const p = keyString(prefix, true);
    const keys = this.disk.sorted();
    const out: string[] = [];
    for (let i = lowerBound(keys, p); i < keys.length && keys[i]!.startsWith(p); i++) out.push(keys[i]!);
    return out;
  }

  async loadRange(prefix: StorageKey): Promise<StorageChunk[]> {
    this.check();
    return this.rangeKeys(prefix).map((k) => ({
      key: decodeKey(Buffer.from(k, 'latin1')),
      data: this.disk.records.get(k)!.slice(),
    }));
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    this.check();
    for (const k of this.rangeKeys(prefix)) this.disk.delete(k);
  }

  async batch(ops: readonly StorageOp[]): Promise<void> {
    this.check();
    // Validate and encode everything first so a bad op leaves the disk untouched.
    const encoded = ops.map((op) => {
      if (op.type === 'put') {
        assertData(op.data);
        return { key: keyString(op.key), data: op.data.slice() as Uint8Array | undefined };
      }
      if (op.type === 'del') return { key: keyString(op.key), data: undefined };
      throw new InvalidArgumentError(`unknown storage op type '${(op as { type: unknown }).type}'`);
    });
    for (const op of encoded) {
      if (op.data === undefined) this.disk.delete(op.key);
      else this.disk.set(op.key, op.data);
    }
  }

  /** Simulates a process crash: the store stops without a clean close. Everything acknowledged is kept. */
  crash(): void {
    this.release();
  }

  async close(): Promise<void> {
    this.release();
  }

  private release(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.disk.holder === this) this.disk.holder = undefined;
  }
}

/** Opens a memory KVStorage, on `options.disk` when given. */
export async function openMemoryKV(options: MemoryKVOptions = {}): Promise<MemoryKVStorage> {
  return new MemoryKVStorage(options);
}
