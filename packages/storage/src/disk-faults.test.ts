/**
 * The level stores on a real disk that fills up (a small tmpfs: ENOSPC) and
 * on one remounted read-only (EROFS): typed errors with stable codes, a
 * failed write that changes nothing, and every later write refused with the
 * same code (LevelDB cannot vouch for its log after a failed write).
 */
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { storageErrorOf } from './errors.js';
import { openLevelKV } from './level-kv.js';
import { openLevelRaftLog } from './level-raft-log.js';
import { canMountTmpfs, mountTmpfs, type Tmpfs } from './testing/tmpfs.js';

const mounts: Tmpfs[] = [];
function tmpfs(sizeBytes: number): Tmpfs {
  const t = mountTmpfs(sizeBytes);
  if (!t) throw new Error('tmpfs mount failed');
  mounts.push(t);
  return t;
}

afterEach(() => {
  for (const m of mounts.splice(0)) m.unmount();
});

if (!canMountTmpfs) console.warn('disk-faults.test: this process may not mount tmpfs (not root): skipped');

describe.skipIf(!canMountTmpfs)('level stores on a full or read-only disk', () => {
  it('kv: a full disk gives storage_full; the failed write is absent and later ones are refused', async () => {
    const fs = tmpfs(3 * 1024 * 1024);
    const filler = join(fs.path, 'filler');
    writeFileSync(filler, new Uint8Array(1024 * 1024));
    const path = join(fs.path, 'kv');
    const kv = await openLevelKV({ path });
    const value = new Uint8Array(32 * 1024).fill(7);
    let acked = 0;
    let failure: unknown;
    for (; acked < 1000; acked++) {
      try {
        await kv.batch([{ type: 'put', key: ['k', String(acked).padStart(4, '0')], data: value }]);
      } catch (err) {
        failure = err;
        break;
      }
    }
    expect(acked).toBeGreaterThan(0);
    expect(failure).toMatchObject({ code: 'storage_full', details: { store: path } });
    // Later writes are refused with the same code, even once there is room again: LevelDB would take
    // them, and lose them when reopened (its log holds the torn record of the failed write).
    unlinkSync(filler);
    await expect(kv.batch([{ type: 'put', key: ['small'], data: new Uint8Array(1) }])).rejects.toMatchObject({
      code: 'storage_full',
    });
    await expect(kv.save(['small'], new Uint8Array(1))).rejects.toMatchObject({ code: 'storage_full' });
    await expect(kv.remove(['k', '0000'])).rejects.toMatchObject({ code: 'storage_full' });
    expect((await kv.loadRange(['k'])).length).toBe(acked); // reads still work
    await kv.close();
    const again = await openLevelKV({ path });
    const keys = (await again.loadRange([])).map((c) => c.key.join('/'));
    expect(keys.length).toBe(acked);
    expect(keys).not.toContain('small');
    await again.close();
  });

  it('raft log: a full disk gives storage_full on save, and the log keeps only what was acknowledged', async () => {
    const fs = tmpfs(3 * 1024 * 1024);
    const filler = join(fs.path, 'filler');
    writeFileSync(filler, new Uint8Array(1024 * 1024));
    const path = join(fs.path, 'raft');
    const log = await openLevelRaftLog({ path });
    const data = new Uint8Array(32 * 1024).fill(3);
    let last = 0;
    let failure: unknown;
    for (let i = 1; i < 1000; i++) {
      try {
        await log.save({ entries: [{ term: 1, index: i, type: 'normal', data }] });
        last = i;
      } catch (err) {
        failure = err;
        break;
      }
    }
    expect(failure).toMatchObject({ code: 'storage_full' });
    expect(log.lastIndex()).toBe(last);
    unlinkSync(filler);
    await expect(
      log.save({ hardState: { term: 2, vote: 'x', commit: 0 }, entries: [], sync: true }),
    ).rejects.toMatchObject({ code: 'storage_full' });
    await log.close();
    const again = await openLevelRaftLog({ path });
    expect(again.lastIndex()).toBe(last);
    expect(again.initialState().hardState.term).toBe(0);
    await again.close();
  });

  it('reopening a store on a disk still full fails with storage_full (LevelDB writes its recovered log)', async () => {
    const fs = tmpfs(2 * 1024 * 1024);
    const path = join(fs.path, 'kv');
    const kv = await openLevelKV({ path });
    const value = new Uint8Array(32 * 1024).fill(7);
    await expect(
      (async () => {
        for (let i = 0; i < 1000; i++) await kv.batch([{ type: 'put', key: ['k', String(i)], data: value }]);
      })(),
    ).rejects.toMatchObject({ code: 'storage_full' });
    await kv.close();
    await expect(openLevelKV({ path })).rejects.toMatchObject({ code: 'storage_full' });
  });

  it('a read-only disk gives storage_unwritable when a store opens, new or existing', async () => {
    // (Linux refuses to remount a filesystem read-only while a file on it is open for writing, as
    // LevelDB's log is: a disk turning read-only under a running node is covered by storageErrorOf.)
    const fs = tmpfs(4 * 1024 * 1024);
    const kv = await openLevelKV({ path: join(fs.path, 'kv') });
    await kv.batch([{ type: 'put', key: ['a'], data: new Uint8Array(1) }]);
    await kv.close();
    fs.remount('ro');
    await expect(openLevelKV({ path: join(fs.path, 'kv') })).rejects.toMatchObject({ code: 'storage_unwritable' });
    await expect(openLevelKV({ path: join(fs.path, 'other') })).rejects.toMatchObject({
      code: 'storage_unwritable',
    });
    await expect(openLevelRaftLog({ path: join(fs.path, 'raft') })).rejects.toMatchObject({
      code: 'storage_unwritable',
    });
    fs.remount('rw');
  });
});

describe('storageErrorOf', () => {
  it('types fs errno errors and LevelDB I/O reports, and leaves other errors alone', () => {
    const errno = (code: string) => Object.assign(new Error(`${code}: failed`), { code });
    expect(storageErrorOf('s', errno('ENOSPC'))).toMatchObject({ code: 'storage_full' });
    expect(storageErrorOf('s', errno('EDQUOT'))).toMatchObject({ code: 'storage_full' });
    expect(storageErrorOf('s', errno('EACCES'))).toMatchObject({ code: 'storage_unwritable' });
    expect(storageErrorOf('s', errno('EROFS'))).toMatchObject({ code: 'storage_unwritable' });
    expect(storageErrorOf('s', errno('EIO'))).toMatchObject({ code: 'storage_failed' });
    const level = (message: string) =>
      Object.assign(new Error('Database failed to open'), {
        code: 'LEVEL_DATABASE_NOT_OPEN',
        cause: Object.assign(new Error(message), { code: 'LEVEL_IO_ERROR' }),
      });
    expect(storageErrorOf('s', level('IO error: /d/LOCK: Permission denied'))).toMatchObject({
      code: 'storage_unwritable',
    });
    expect(storageErrorOf('s', level('IO error: /d/000003.log: Input/output error'))).toMatchObject({
      code: 'storage_failed',
    });
    expect(storageErrorOf('s', Object.assign(new Error('x'), { code: 'LEVEL_CORRUPTION' }))).toMatchObject({
      code: 'storage_corrupt',
    });
    const bug = new TypeError('not a storage failure');
    expect(storageErrorOf('s', bug)).toBe(bug);
  });

  it('a file that cannot be written in a directory is typed too', () => {
    // As root, permissions do not refuse: a path under a regular file fails with ENOTDIR.
    const err = (() => {
      try {
        writeFileSync('/dev/null/x', 'y');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(storageErrorOf('s', err)).toMatchObject({ code: 'storage_failed' });
  });
});
