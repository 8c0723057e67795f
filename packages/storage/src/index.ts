/**
 * @parley/storage — the storage contracts of @parley/interface on LevelDB and in memory.
 *
 * @example
 * ```ts
 * import { openLevelKV, openLevelRaftLog } from '@parley/storage';
 * const kv = await openLevelKV({ path: './.parley/crdt' });          // fsync on by default
 * await kv.batch([{ type: 'put', key: ['crdt', 'deploy', 'rollout'], data: bytes }]);
 * const chunks = await kv.loadRange(['crdt', 'deploy']);             // element-wise prefix, key order
 *
 * const log = await openLevelRaftLog({ path: './.parley/raft' });    // loads the log into memory
 * await log.save({ entries: [{ term: 1, index: 1, type: 'normal', data }], hardState: { term: 1, vote: 'a', commit: 0 } });
 * log.entries(1, log.lastIndex() + 1);                               // synchronous, from memory
 * ```
 */
export { crc32c } from './crc32c.js';
export { type DirLock, lockDirectory } from './dir-lock.js';
export { storageErrorOf, WriteFault } from './errors.js';
export { compareKeys, decodeKey, encodeKey, MAX_KEY_BYTES, prefixUpperBound } from './key-codec.js';
export { type LevelKVOptions, LevelKVStorage, openLevelKV, REMOVE_RANGE_CHUNK_KEYS } from './level-kv.js';
export { type LevelRaftLogOptions, LevelRaftLogStorage, openLevelRaftLog } from './level-raft-log.js';
export { MemoryKVDisk, type MemoryKVOptions, MemoryKVStorage, openMemoryKV } from './memory-kv.js';
export {
  MemoryRaftLogDisk,
  type MemoryRaftLogOptions,
  MemoryRaftLogStorage,
  openMemoryRaftLog,
} from './memory-raft-log.js';
export { ENTRY_OVERHEAD_BYTES, entrySizeBytes } from './raft-log-state.js';
