/** The byte arenas and columnar entry log live beside the Raft log contract, in @parley/interface. */
export { ARENA_CHUNK_BYTES, ByteArena, copyBytes, EntryColumns } from '@parley/interface/raft-log-kit';
