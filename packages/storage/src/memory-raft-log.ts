/**
 * RaftLogStorage in memory, the twin of the level Raft log: the one memory
 * implementation lives beside the contract in @parley/interface (pure, so the
 * Raft package uses it too) and is re-exported here under its existing names.
 */
export {
  MemoryRaftLogDisk,
  type MemoryRaftLogOptions,
  MemoryRaftLogStorage,
  openMemoryRaftLog,
} from '@parley/interface';
