/**
 * Every entry is a lease: a write sets its TTL, and a write without `-t` sets
 * the default (1 h), also over an entry that had a longer one. Before such a
 * write the CLI reads the entry, and afterwards says on stderr when the write
 * shortened its TTL, so nobody loses a 30-day entry to a quick fix by hand.
 */
import type { ApiClient } from './client.js';
import { ApiError } from './client.js';
import type { Out } from './output.js';

type Entry = { ttl_seconds?: unknown };

/** The entry's TTL in seconds before the write, or undefined (absent, unreadable: no note then). */
export async function ttlBefore(client: ApiClient, entryPath: string): Promise<number | undefined> {
  try {
    const { data } = await client.call<Entry>('GET', entryPath);
    return typeof data.ttl_seconds === 'number' ? data.ttl_seconds : undefined;
  } catch (err) {
    if (err instanceof ApiError) return undefined; // absent, or the write reports the real failure
    throw err;
  }
}

/** Says on stderr when a write without -t gave the entry a shorter TTL than it had. */
export function noteShortenedTtl(out: Out, before: number | undefined, after: unknown): void {
  if (before === undefined || typeof after !== 'number' || after >= before) return;
  out.stderr(
    `note: the TTL went from ${before} s to ${after} s (the default): a write without -t sets the default TTL; pass -t ${before} to keep it`,
  );
}
