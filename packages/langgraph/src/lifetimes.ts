/**
 * Entry lifetimes. Every strong entry has a TTL; a thread's newest checkpoint
 * names channel values written by earlier checkpoints, and the thread's index
 * entry was written once. Both must outlive the newest checkpoint: after each
 * checkpoint is written, those that would expire before it are written again
 * (same value, twice the checkpoint TTL, the writer's fence), so an active
 * thread stays whole and an idle one expires as a unit, oldest history first.
 *
 * Known expiries (of entries this saver wrote or read) are remembered, boundedly,
 * so a put reads an unchanged channel's entry at most once per process.
 */
import { isParleyError } from '@parley/interface';
import type { JsonValue, StrongEntry } from '@parley/node';
import { isConflict, readEntry, type WriteContext, writeEntry } from './payload.js';

const MAX_KNOWN = 10_000;

export class Lifetimes {
  private readonly known = new Map<string, number>();

  note(namespace: string, entry: StrongEntry): void {
    const k = `${namespace}\u0000${entry.key}`;
    this.known.delete(k);
    this.known.set(k, entry.expiresAt);
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value as string);
  }

  expiry(namespace: string, key: string): number | undefined {
    return this.known.get(`${namespace}\u0000${key}`);
  }

  forgetNamespace(namespace: string): void {
    const prefix = `${namespace}\u0000`;
    for (const k of [...this.known.keys()]) if (k.startsWith(prefix)) this.known.delete(k);
  }

  /**
   * Writes again each payload entry among `keys` that would expire before
   * `until` (state-machine ms), with the TTL of `w`. A conflict (someone else
   * rewrote it) or a stale fence (this writer lost the thread) leaves theirs.
   */
  async outlive(w: WriteContext, keys: string[], until: number): Promise<void> {
    await Promise.all(
      keys.map(async (key) => {
        const known = this.expiry(w.ns.name, key);
        if (known !== undefined && known >= until) return;
        const read = await readEntry(w.ns, key);
        if (!read) return;
        this.note(w.ns.name, read.entry);
        if (read.entry.expiresAt >= until) return;
        const { p: _p, px: _px, ...fields } = read.entry.value as Record<string, JsonValue>;
        try {
          const fresh = await writeEntry(w, key, fields, read.text, {
            ifVersion: read.entry.version,
            previous: read.entry,
          });
          this.note(w.ns.name, fresh);
        } catch (err) {
          if (!isConflict(err) && !isParleyError(err, 'fence_stale')) throw err;
        }
      }),
    );
  }
}
