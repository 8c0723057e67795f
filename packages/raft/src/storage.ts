/**
 * RaftLogStorage in memory: the one memory implementation of the contract,
 * `MemoryRaftLogStorage` of @parley/interface, under the name this package
 * has always exported. Writes apply inside `save` and resolve at once;
 * `reopen()` is a new handle on the same contents, as after a restart.
 */
export { MemoryRaftLogStorage as MemoryRaftStorage } from '@parley/interface';
