/**
 * Disk faults on a node's data dir, which is then a tmpfs of its own
 * (`mount -t tmpfs -o size=…`, owned by the node's uid):
 * - full: a file of the harness (root) fills the mount until ENOSPC, so the
 *   node's next write or fsync fails; heal deletes it.
 * - read-only: the mount is remounted `ro`. Linux refuses that while a file
 *   is open for writing (EBUSY), so the nemesis kills the node (-9) first and
 *   restarts it on the read-only dir: what a node does when its disk went
 *   read-only under it and it was restarted. Heal kills it, remounts `rw`
 *   and restarts it.
 * Cannot express: a disk that fails while the node keeps its files open
 * (dm-flakey or a FUSE layer would be needed), torn writes, or lost fsyncs
 * (a tmpfs, like a page cache, keeps what a killed process wrote).
 */
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tryRun } from './cleanup.js';

export const FILLER = '.torture-filler';

export function mountTmpfs(dir: string, sizeMb: number, uid: number, gid: number): boolean {
  return tryRun('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700,uid=${uid},gid=${gid}`, 'tmpfs', dir]);
}

export function remount(dir: string, mode: 'ro' | 'rw'): boolean {
  return tryRun('mount', ['-o', `remount,${mode}`, dir]);
}

/** Fills the mount at `dir` with one file until ENOSPC; returns the bytes written. */
export function fill(dir: string): number {
  const fd = openSync(join(dir, FILLER), 'w', 0o600);
  let total = 0;
  try {
    for (const size of [1 << 20, 64 << 10, 4 << 10, 512]) {
      const chunk = Buffer.alloc(size, 0x5a);
      for (;;) {
        try {
          total += writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return total;
}

export function unfill(dir: string): void {
  rmSync(join(dir, FILLER), { force: true });
}
