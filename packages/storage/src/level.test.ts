import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isParleyError, StorageCorruptError } from '@parley/interface';
import { Level } from 'level';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { encodeKey } from './key-codec.js';
import { openLevelKV, REMOVE_RANGE_CHUNK_KEYS } from './level-kv.js';
import { openLevelRaftLog } from './level-raft-log.js';
import { entryKey, HARD_STATE_KEY, SNAPSHOT_KEY } from './raft-codec.js';
import { kvStorageCompliance } from './testing/kv-compliance.js';
import { entry, raftLogStorageCompliance } from './testing/raft-log-compliance.js';

const tempDir = (label: string) => mkdtemp(join(tmpdir(), `parley-${label}-`));
const dispose = (dir: string) => () => rm(dir, { recursive: true, force: true });

// In one process a LevelDB directory cannot be opened twice, so "crash" here closes the handle with any write
// still in flight; crash.test.ts kills a real writer process with SIGKILL instead.
kvStorageCompliance({
  name: 'level',
  harness: async () => {
    const dir = await tempDir('kv');
    return { open: () => openLevelKV({ path: dir }), crash: (s) => s.close(), dispose: dispose(dir) };
  },
  randomSteps: 150,
});

raftLogStorageCompliance({
  name: 'level',
  harness: async () => {
    const dir = await tempDir('raft');
    return { open: () => openLevelRaftLog({ path: dir }), crash: (s) => s.close(), dispose: dispose(dir) };
  },
  randomSteps: 150,
});

/** Rewrites one stored value through a raw LevelDB handle, as a bit flip on disk would. */
async function tamper(dir: string, key: Uint8Array, edit: (value: Buffer) => Buffer | undefined): Promise<void> {
  const db = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const value = await db.get(Buffer.from(key));
  if (!value) throw new Error('nothing to tamper with');
  const next = edit(Buffer.from(value));
  if (next === undefined) await db.del(Buffer.from(key));
  else await db.put(Buffer.from(key), next);
  await db.close();
}

const flip = (at: number) => (v: Buffer) => {
  v[Math.min(at, v.length - 1)]! ^= 0x10;
  return v;
};

async function corruptError(fn: () => Promise<unknown>): Promise<StorageCorruptError> {
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected StorageCorruptError').toBeInstanceOf(StorageCorruptError);
  return err as StorageCorruptError;
}

describe('level KV', () => {
  it('removeRange clears a range larger than one deletion chunk, and nothing outside it', async () => {
    const path = await tempDir('kv-big-range');
    const kv = await openLevelKV({ path });
    const ops = Array.from({ length: REMOVE_RANGE_CHUNK_KEYS * 2 + 17 }, (_, i) => ({
      type: 'put' as const,
      key: ['big', String(i).padStart(6, '0')],
      data: new Uint8Array([i & 0xff]),
    }));
    await kv.batch(ops);
    await kv.save(['bigger'], new Uint8Array([1]));
    await kv.save(['big'], new Uint8Array([2]));
    await kv.removeRange(['big']);
    expect((await kv.loadRange([])).map((c) => c.key)).toEqual([['bigger']]);
    await kv.close();
    await rm(path, { recursive: true, force: true });
  });
});

describe('level Raft log', () => {
  it('keeps its own copy of entry and snapshot bytes', async () => {
    const path = await tempDir('raft-copy');
    const log = await openLevelRaftLog({ path });
    const data = new Uint8Array([1, 2, 3]);
    const snap = new Uint8Array([9]);
    await log.save({
      entries: [{ term: 1, index: 1, type: 'normal', data }],
      snapshot: { meta: { index: 0, term: 0, confState: { voters: [], learners: [] } }, data: snap },
    });
    data[0] = 7;
    snap[0] = 7;
    expect(log.entries(1, 2)[0]!.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(log.snapshot().data).toEqual(new Uint8Array([9]));
    await log.close();
    await rm(path, { recursive: true, force: true });
  });
});

describe('level Raft log: unsynced saves', () => {
  it('writes an update that says sync: false without fsync, everything else with it; a clean close keeps both', async () => {
    const path = await tempDir('raft-sync');
    const batch = vi.spyOn(Level.prototype, 'batch');
    try {
      const log = await openLevelRaftLog({ path });
      const syncOf = () =>
        ((batch.mock.lastCall as unknown[] | undefined)?.[1] as { sync?: boolean } | undefined)?.sync;
      await log.save({ entries: [entry(1, 1), entry(2, 1)], hardState: { term: 1, vote: 'a', commit: 1 } });
      expect(syncOf()).toBe(true);
      await log.save({ hardState: { term: 1, vote: 'a', commit: 2 }, sync: false });
      expect(syncOf()).toBe(false);
      await log.createSnapshot(2, { voters: ['a'], learners: [] }, new Uint8Array([1]));
      expect(syncOf()).toBe(true);
      await log.close();
      const again = await openLevelRaftLog({ path });
      expect(again.initialState().hardState.commit).toBe(2);
      await again.close();
    } finally {
      batch.mockRestore();
      await rm(path, { recursive: true, force: true });
    }
  });
});

describe('level stores: corruption is detected and names the store', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  const dir = async (label: string) => {
    const d = await tempDir(label);
    dirs.push(d);
    return d;
  };

  it('KV: a flipped byte in a value fails load, loadRange and verify-on-open', async () => {
    const path = await dir('kv-corrupt');
    const kv = await openLevelKV({ path, name: 'crdt-state' });
    await kv.save(['ns', 'good'], new Uint8Array([1, 2, 3]));
    await kv.save(['ns', 'bad'], new Uint8Array(100).fill(7));
    await kv.close();
    await tamper(path, encodeKey(['ns', 'bad']), flip(40));
    const reopened = await openLevelKV({ path, name: 'crdt-state' });
    expect(await reopened.load(['ns', 'good'])).toEqual(new Uint8Array([1, 2, 3]));
    const err = await corruptError(() => reopened.load(['ns', 'bad']));
    expect(err.code).toBe('storage_corrupt');
    expect(err.message).toContain("'crdt-state'");
    expect(err.message).toContain('"ns","bad"');
    await corruptError(() => reopened.loadRange(['ns']));
    await corruptError(() => reopened.verify());
    await reopened.close();
    await corruptError(() => openLevelKV({ path, name: 'crdt-state', verifyOnOpen: true }));
  });

  it('KV: a record copied under another key is caught (the checksum covers the key)', async () => {
    const path = await dir('kv-moved');
    const kv = await openLevelKV({ path });
    await kv.save(['a'], new Uint8Array([1]));
    await kv.save(['b'], new Uint8Array([2]));
    await kv.close();
    const db = new Level<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.put(encodeKey(['b']), (await db.get(encodeKey(['a'])))!);
    await db.close();
    const reopened = await openLevelKV({ path });
    await corruptError(() => reopened.load(['b']));
    await reopened.close();
  });

  async function raftLogAt(label: string): Promise<string> {
    const path = await dir(label);
    const log = await openLevelRaftLog({ path, name: 'raft-log' });
    const entries = Array.from({ length: 20 }, (_, i) => entry(i + 1, 1, 50));
    await log.save({ entries, hardState: { term: 1, vote: 'a', commit: 15 } });
    await log.createSnapshot(10, { voters: ['a'], learners: [] }, new Uint8Array(30).fill(9));
    await log.close();
    return path;
  }

  for (const [what, key, edit] of [
    ['an entry', entryKey(7), flip(20)],
    ['the hard state', HARD_STATE_KEY, flip(8)],
    ['the snapshot', SNAPSHOT_KEY, flip(30)],
    ['a truncated record', entryKey(3), (v: Buffer) => v.subarray(0, 3)],
  ] as const) {
    it(`Raft log: ${what} that fails its checksum stops the open`, async () => {
      const path = await raftLogAt('raft-corrupt');
      await tamper(path, key, edit);
      const err = await corruptError(() => openLevelRaftLog({ path, name: 'raft-log' }));
      expect(err.message).toContain("'raft-log'");
    });
  }

  it('Raft log: a missing entry in the middle stops the open', async () => {
    const path = await raftLogAt('raft-gap');
    await tamper(path, entryKey(12), () => undefined);
    const err = await corruptError(() => openLevelRaftLog({ path, name: 'raft-log' }));
    expect(err.message).toContain('entry 12 is missing');
  });

  it('Raft log: lost committed entries at the tail stop the open', async () => {
    const path = await raftLogAt('raft-tail');
    for (let i = 20; i >= 14; i--) await tamper(path, entryKey(i), () => undefined);
    const err = await corruptError(() => openLevelRaftLog({ path, name: 'raft-log' }));
    expect(err.message).toContain('commit index 15');
  });

  it('Raft log: losing only uncommitted tail entries is a consistent (shorter) log', async () => {
    const path = await raftLogAt('raft-uncommitted');
    for (let i = 20; i >= 17; i--) await tamper(path, entryKey(i), () => undefined);
    const log = await openLevelRaftLog({ path });
    expect(log.lastIndex()).toBe(16);
    await log.close();
  });

  it('Raft log: damage inside LevelDB files is reported, never a silently shorter log', async () => {
    const path = await dir('raft-file');
    const log = await openLevelRaftLog({ path, name: 'raft-log' });
    // Large entries spread the write-ahead log over many 32 KiB blocks.
    for (let i = 1; i <= 40; i++) {
      await log.save({ entries: [entry(i, 1, 8_000)], hardState: { term: 1, vote: 'a', commit: i } });
    }
    await log.close();
    const files = (await readdir(path)).filter((f) => f.endsWith('.log') || f.endsWith('.ldb'));
    expect(files.length).toBeGreaterThan(0);
    let damaged = 0;
    for (const f of files) {
      const bytes = await readFile(join(path, f));
      if (bytes.length < 100_000) continue;
      for (let at = 60_000; at < 70_000; at++) bytes[at]! ^= 0xff;
      await writeFile(join(path, f), bytes);
      damaged++;
    }
    expect(damaged).toBe(1);
    const err = await openLevelRaftLog({ path, name: 'raft-log' }).then(
      async (opened) => {
        const summary = `opened with last index ${opened.lastIndex()}`;
        await opened.close();
        return summary;
      },
      (e: unknown) => e,
    );
    // LevelDB itself skips the damaged write-ahead-log blocks; the gap check is what turns that into an error.
    expect(isParleyError(err, 'storage_corrupt'), String(err)).toBe(true);
  });
});
