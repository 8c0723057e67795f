/**
 * The Raft log storage compliance suite of @parley/storage against @parley/raft's MemoryRaftStorage.
 * Each implementation runs the suites once, beside its own code where it can: level and memory in
 * packages/storage, the simulator's disks in packages/sim; the pure Raft package cannot import the
 * suite, so its store runs here.
 */
import { MemoryRaftStorage } from '@parley/raft';
import { raftLogStorageCompliance } from '@parley/storage/compliance/raft-log';

raftLogStorageCompliance({
  name: '@parley/raft MemoryRaftStorage',
  harness: () => {
    // Every save is durable when it returns, so reopening after a close or a crash is a new handle on the
    // same contents.
    let current: MemoryRaftStorage | undefined;
    return {
      open: async () => {
        current = current ? current.reopen() : new MemoryRaftStorage();
        return current;
      },
      crash: async () => undefined,
    };
  },
});
