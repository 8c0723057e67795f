/**
 * A node on a real disk that is read-only or full (a small tmpfs, mounted as
 * root): typed storage errors with stable codes, never a raw errno.
 */
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canMountTmpfs, mountTmpfs, type Tmpfs } from '@parley/storage/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createNode } from './node.js';
import { silentNodeLogger } from './testing/testkit.js';

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

  it('an eventual write on a full disk fails with storage_full and leaves nothing, now or after a restart', async () => {
    const fs = tmpfs(3 * 1024 * 1024);
    const filler = join(fs.path, 'filler');
    writeFileSync(filler, new Uint8Array(1024 * 1024));
    const dataDir = join(fs.path, 'node');
    let node = await createNode({ dataDir, logger: silentNodeLogger });
    let ns = node.eventual('fill');
    await ns.increment('count', 1);
    const value = 'x'.repeat(32 * 1024);
    let acked = 0;
    let failure: unknown;
    for (; acked < 1000; acked++) {
      try {
        await ns.set(`k${acked}`, value);
      } catch (err) {
        failure = err;
        break;
      }
    }
    expect(failure).toMatchObject({ code: 'storage_full' });
    expect(await ns.get(`k${acked}`)).toBeUndefined();
    await expect(ns.increment('count', 1)).rejects.toMatchObject({ code: 'storage_full' });
    expect((await ns.get('count'))?.value).toBe(1);
    expect((await node.status()).namespaces.find((n) => n.name === 'fill')?.keys).toBe(acked + 1);
    await node.close();
    unlinkSync(filler);
    node = await createNode({ dataDir, logger: silentNodeLogger });
    ns = node.eventual('fill');
    expect(await ns.get(`k${acked}`)).toBeUndefined();
    expect((await ns.get(`k${acked - 1}`))?.value).toBe(value);
    expect((await ns.increment('count', 1)).value).toBe(2); // the retry counts once
    await node.close();
  });

  it('starting on a disk too full to open the stores fails with storage_full', async () => {
    const fs = tmpfs(8 * 1024);
    await expect(createNode({ dataDir: join(fs.path, 'node'), logger: silentNodeLogger })).rejects.toMatchObject({
      code: 'storage_full',
    });
  });
});
