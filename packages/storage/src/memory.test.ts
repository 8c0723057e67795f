import { describe, expect, it } from 'vitest';
import { MemoryKVDisk, MemoryKVStorage, openMemoryKV } from './memory-kv.js';
import { MemoryRaftLogDisk, MemoryRaftLogStorage, openMemoryRaftLog } from './memory-raft-log.js';
import { kvStorageCompliance } from './testing/kv-compliance.js';
import { raftLogStorageCompliance } from './testing/raft-log-compliance.js';

kvStorageCompliance({
  name: 'memory',
  harness: () => {
    const disk = new MemoryKVDisk();
    return { open: () => openMemoryKV({ disk }), crash: async (s) => (s as MemoryKVStorage).crash() };
  },
});

raftLogStorageCompliance({
  name: 'memory',
  harness: () => {
    const disk = new MemoryRaftLogDisk();
    return { open: () => openMemoryRaftLog({ disk }), crash: async (s) => (s as MemoryRaftLogStorage).crash() };
  },
});

describe('memory stores', () => {
  it('keep their own copy of entry and snapshot bytes', async () => {
    const log = await openMemoryRaftLog();
    const data = new Uint8Array([1, 2, 3]);
    await log.save({ entries: [{ term: 1, index: 1, type: 'normal', data }] });
    const snap = new Uint8Array([9]);
    await log.createSnapshot(1, { voters: [], learners: [] }, snap);
    data[0] = 7;
    snap[0] = 7;
    expect(log.entries(1, 2)[0]!.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(log.snapshot().data).toEqual(new Uint8Array([9]));
  });

  it('refuse a second open on the same disk until the first is closed or crashed', async () => {
    const disk = new MemoryKVDisk();
    const a = await openMemoryKV({ disk });
    expect(() => new MemoryKVStorage({ disk })).toThrow(/already open/);
    a.crash();
    const b = await openMemoryKV({ disk });
    await b.close();
    const logDisk = new MemoryRaftLogDisk();
    const log = await openMemoryRaftLog({ disk: logDisk });
    expect(() => new MemoryRaftLogStorage({ disk: logDisk })).toThrow(/already open/);
    await log.close();
    await (await openMemoryRaftLog({ disk: logDisk })).close();
  });
});
