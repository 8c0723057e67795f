/**
 * A node on a real disk that is read-only or full (a small tmpfs, mounted as
 * root): typed storage errors with stable codes, never a raw errno.
 */
import { join } from 'node:path';
import { canMountTmpfs, mountTmpfs, type Tmpfs } from '@parley/storage/fixtures/tmpfs';
import { afterEach, describe, expect, it } from 'vitest';
import { createNode } from './node.js';
import { silentNodeLogger } from './testkit.js';

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

if (!canMountTmpfs) console.warn('node disk-faults.test: this process may not mount tmpfs (not root): skipped');

describe.skipIf(!canMountTmpfs)('a node on a read-only or full disk', () => {
  it('starting on a read-only filesystem fails with storage_unwritable', async () => {
    const fs = tmpfs(1024 * 1024);
    fs.remount('ro');
    await expect(createNode({ dataDir: join(fs.path, 'node'), logger: silentNodeLogger })).rejects.toMatchObject({
      code: 'storage_unwritable',
    });
  });

  it('starting on a disk too full to open the stores fails with storage_full', async () => {
    const fs = tmpfs(8 * 1024);
    await expect(createNode({ dataDir: join(fs.path, 'node'), logger: silentNodeLogger })).rejects.toMatchObject({
      code: 'storage_full',
    });
  });
});
