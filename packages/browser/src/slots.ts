/**
 * Replica slots: several tabs of one browser profile share one IndexedDB
 * database, but each must be a replica of its own (a replica id is one
 * writer: two tabs writing under one id would reuse each other's dots). A tab
 * holds the first free slot of a namespace by a Web Lock, for as long as it
 * keeps the namespace open (the browser releases it when the tab goes); slot n
 * has its own replica id and its own log. A reload takes slot 0 again, so a
 * single tab always reopens the same replica. Without Web Locks (Node, old
 * browsers) every namespace is slot 0.
 */
import { UnavailableError } from '@parley/interface';

/** Tabs that may hold one namespace at once. */
export const MAX_SLOTS = 64;

interface Locks {
  request(name: string, options: { ifAvailable: boolean }, callback: (lock: unknown) => Promise<void>): Promise<void>;
}

/** The slot of namespace `ns` in database `db` this tab now holds, until `released` resolves. */
export async function acquireSlot(db: string, ns: string, released: Promise<void>): Promise<number> {
  const locks = (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks;
  if (locks === undefined) return 0;
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    const held = await new Promise<boolean>((resolve, reject) => {
      locks
        .request(`parley:${db}:${ns}:${slot}`, { ifAvailable: true }, async (lock) => {
          resolve(lock !== null);
          if (lock !== null) await released;
        })
        .catch(reject);
    });
    if (held) return slot;
  }
  throw new UnavailableError(`${MAX_SLOTS} tabs already hold namespace '${ns}'`);
}

/** The name a slot's keys are kept under: the namespace itself for slot 0 (names never hold '#'). */
export function spaceOf(ns: string, slot: number): string {
  return slot === 0 ? ns : `${ns}#${slot}`;
}
