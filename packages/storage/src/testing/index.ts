/**
 * `@parley/storage/testing` — the compliance suites (vitest) every `KVStorage`
 * and `RaftLogStorage` runs (LevelDB, memory, the simulator's disks), and a
 * small tmpfs mount for tests of a full disk.
 */
export type { StoreComplianceOptions, StoreHarness, StoreSession } from './harness.js';
export { type KVComplianceOptions, type KVHarness, kvStorageCompliance } from './kv-compliance.js';
export {
  entry,
  type RaftLogComplianceOptions,
  type RaftLogHarness,
  raftLogStorageCompliance,
} from './raft-log-compliance.js';
export { canMountTmpfs, mountTmpfs, type Tmpfs } from './tmpfs.js';
