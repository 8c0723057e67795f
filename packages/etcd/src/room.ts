/**
 * The namespace key bound on etcd (`namespace_full`): the entry keys of a
 * namespace at one revision, and the compares a creating write adds when the
 * namespace is near its bound, so racing creates cannot pass it together.
 * Shared by entry writes (entries.ts), leases and lists (list.ts).
 */
import { NamespaceFullError, UnavailableError } from '@parley/interface';
import type { ICompare } from 'etcd3';
import type { EtcdContext } from './context.js';
import { prefixEnd } from './keys.js';
import { forEachChunk, type IndexedKey, indexRange } from './scan.js';
import { decodeKv } from './stored.js';
import type { CallBound } from './txn.js';

/** How close to the key bound a create must be before it also compares the whole namespace. */
export const NEAR_FULL_MARGIN = 256;

/** Most raw keys (live or awaiting cleanup) one namespace scan reads before it gives up. */
function maxScanKeys(ctx: EtcdContext): number {
  return ctx.limits.maxKeysPerNamespace * 8 + 1024;
}

/** The entry keys of a namespace (expired ones too; no values) at one revision, in etcd's order. */
export async function indexNamespace(
  ctx: EtcdContext,
  namespace: string,
  call: CallBound,
): Promise<{ keys: IndexedKey[]; revision: number }> {
  const { kvs, revision, truncated } = await indexRange(
    ctx,
    ctx.keys.namespaceEntries(namespace),
    call,
    maxScanKeys(ctx),
  );
  if (truncated) {
    throw new UnavailableError(
      `namespace '${namespace}' holds more than ${maxScanKeys(ctx)} keys awaiting cleanup in etcd; retry later`,
      { backend: 'etcd', namespace },
    );
  }
  const keys: IndexedKey[] = [];
  for (const kv of kvs) {
    const name = ctx.keys.parseEntry(kv.key);
    if (name && name.namespace === namespace) keys.push({ key: name.key, raw: kv.key });
  }
  return { keys, revision };
}

/**
 * The namespace bound for a write that creates a key: throws
 * NamespaceFullError when the namespace already holds maxKeysPerNamespace
 * live keys. Far from the bound (by etcd's raw key count) nothing more is
 * needed; near it, the live keys are counted (records are read only while
 * the raw count leaves the answer open) and the returned compare makes the
 * write's transaction fail if any key of the namespace was created or
 * changed since the count, so racing creates cannot pass the bound together.
 */
export async function roomCompares(
  ctx: EtcdContext,
  namespace: string,
  call: CallBound,
  /** The raw key count when the caller already read it (in its write's snapshot). */
  knownCount?: number,
): Promise<ICompare[]> {
  const start = ctx.keys.namespaceEntries(namespace);
  const max = ctx.limits.maxKeysPerNamespace;
  const count =
    knownCount ??
    Number((await ctx.calls.range({ key: start, range_end: prefixEnd(start), count_only: true }, call)).count);
  if (count + NEAR_FULL_MARGIN < max) return [];
  const { keys, revision } = await indexNamespace(ctx, namespace, call);
  const now = ctx.clock.nowMs();
  let live = 0;
  let seen = 0;
  if (keys.length >= max) {
    await forEachChunk(ctx, keys, revision, call, (chunk) => {
      for (const { kv } of chunk) {
        seen++;
        if (kv && decodeKv(ctx, kv).expiresAt > now) live++;
      }
      return live < max && live + (keys.length - seen) >= max;
    });
  }
  if (live >= max) throw new NamespaceFullError(namespace, max);
  return [{ key: start, range_end: prefixEnd(start), target: 'Mod', result: 'Less', mod_revision: revision + 1 }];
}
