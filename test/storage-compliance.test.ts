/**
 * The Raft log storage compliance suite of @parley/storage against @parley/raft's MemoryRaftStorage:
 * the one memory implementation of @parley/interface, through the name and the `reopen()` the Raft
 * package's tests use. Each store runs the suite beside its own code where it can: level and memory in
 * packages/storage, the simulator's disks in packages/sim; the pure Raft package cannot import the
 * suite, so its export runs here.
 */
import { MemoryRaftStorage } from '@parley/raft';
import { raftLogStorageCompliance } from '@parley/storage/testing';

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
