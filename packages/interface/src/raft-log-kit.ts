/**
 * `@parley/interface/raft-log-kit` — what every `RaftLogStorage`
 * implementation shares (the in-memory twin here, LevelDB in
 * @parley/storage, the simulator's disk): the log state with its save plans,
 * and the byte arenas and columnar entry log it keeps entries in.
 */
export { ARENA_CHUNK_BYTES, ByteArena, copyBytes, EntryColumns } from './arena.js';
export { ENTRY_OVERHEAD_BYTES, entrySizeBytes, RaftLogState, type SavePlan } from './raft-log-state.js';
