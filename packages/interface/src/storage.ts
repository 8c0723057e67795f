/**
 * Key/value storage for replicated state, over string-array keys
 * (`['crdt', namespace, key]`). Implementations: level on disk, memory, simulated.
 */
export type StorageKey = readonly string[];

export interface StorageChunk {
  key: string[];
  data: Uint8Array;
}

export type StorageOp = { type: 'put'; key: StorageKey; data: Uint8Array } | { type: 'del'; key: StorageKey };

/**
 * Every write resolves once it is durable under the store's sync setting
 * (fsync on by default for stores that safety depends on). A batch applies
 * atomically: after a crash it is entirely present or entirely absent.
 * A missing key loads as `undefined`.
 */
export interface KVStorage {
  load(key: StorageKey): Promise<Uint8Array | undefined>;
  save(key: StorageKey, data: Uint8Array): Promise<void>;
  remove(key: StorageKey): Promise<void>;
  /**
   * Every entry whose key starts with `prefix` (element-wise), in key order: element by element,
   * each compared by Unicode code point (the order of their UTF-8 bytes); a prefix sorts first.
   */
  loadRange(prefix: StorageKey): Promise<StorageChunk[]>;
  removeRange(prefix: StorageKey): Promise<void>;
  batch(ops: readonly StorageOp[]): Promise<void>;
  close(): Promise<void>;
}
