/**
 * Namespace-wide operations on etcd: `list` (coord's q / filter / sortBy /
 * sortOrder / limit / cursor grammar over the namespace at one revision),
 * `delete_namespace` (confirm and a glob pattern), the namespace key bound
 * (`namespace_full`), and `usage()`.
 *
 * Each reads the namespace's keys without values (scan.ts), pinned to the
 * first page's revision, so a list is a consistent snapshot (linearizable:
 * the first page is a quorum read), then only the records it needs, a chunk
 * at a time at that revision. Entries past their deadline are skipped, as
 * everywhere.
 */

import type { Entry, StrongNamespaceUsage } from '@parley/coord';
import {
  type CursorPosition,
  compileGlob,
  globMatch,
  type Operation,
  type OpResult,
  planList,
  takePage,
} from '@parley/coord';
import { checkIntInRange, checkKey, checkNamespace, checkOptionalString } from '@parley/coord/shared';
import { InvalidArgumentError, UnavailableError } from '@parley/interface';
import type { IKeyValue } from 'etcd3';
import type { EtcdContext, OpCall } from './context.js';
import { newRequest } from './context.js';
import { decodeKv, entryView, unchanged } from './entries.js';
import type { EntryRecord } from './record.js';
import { indexNamespace } from './room.js';
import { forEachChunk, type IndexedKey, indexRange, readChunk } from './scan.js';
import type { CallBound } from './txn.js';

/** Keys deleted per transaction by delete_namespace (etcd's --max-txn-ops defaults to 128). */
export const DELETE_BATCH = 100;
/** Keys usage() reads at most (live and expired, over all namespaces). */
const USAGE_SCAN_KEYS = 20_000;

interface Match {
  pos: CursorPosition;
  raw: Buffer;
  valueBytes: number;
  /** Kept while the matches held stay within one page's bytes (sorted by key); else read again. */
  kv?: IKeyValue;
}

/**
 * A list page. The namespace's keys are read without values; q and a key
 * cursor are applied to keys alone. Sorted by key, records are then read in
 * page order, a chunk at a time, until the page and one more match are
 * found. Sorted by a time, every remaining candidate's record is read (its
 * time is in it), a chunk at a time, keeping only the best `limit + 1`
 * positions; the page's records are read again at the same revision.
 */
export async function listEntries(
  ctx: EtcdContext,
  op: Extract<Operation, { type: 'list' }>,
  call: OpCall,
): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  const plan = planList(ctx.limits, op);
  const { sortBy, limit, after, compare } = plan;

  const { keys, revision } = await indexNamespace(ctx, namespace, call);
  const now = ctx.clock.nowMs();
  let candidates = keys.filter((k) => plan.keyMatches(k.key));
  /** The record of a candidate when it is a match (live, past the cursor, passing the filter). */
  const matchOf = (k: IndexedKey, kv: IKeyValue | undefined): Match | undefined => {
    if (!kv) return undefined;
    const record = decodeKv(ctx, kv);
    if (record.expiresAt <= now) return undefined;
    const pos = plan.position(k.key, record.createdAt, record.updatedAt);
    if (!plan.afterCursor(pos)) return undefined;
    if (!plan.valueMatches(record.value)) return undefined;
    return { pos, raw: k.raw, valueBytes: record.valueBytes };
  };

  // The first `limit + 1` matches in list order (a page takes at most `limit`; one more says there is a next page).
  const best: Match[] = [];
  if (sortBy === 'key') {
    if (after) candidates = candidates.filter((k) => compare({ sortValue: k.key, key: k.key }, after) > 0);
    candidates.sort((a, b) => compare({ sortValue: a.key, key: a.key }, { sortValue: b.key, key: b.key }));
    let pageBytes = 0;
    await forEachChunk(
      ctx,
      candidates,
      revision,
      call,
      (chunk) => {
        for (const { key, kv } of chunk) {
          const m = matchOf(key, kv);
          if (!m) continue;
          best.push({ ...m, kv });
          // Past `limit`, or past the page's byte bound: this match opens the next page.
          if (best.length > limit || (best.length > 1 && pageBytes + m.valueBytes > plan.maxPageBytes)) {
            return false;
          }
          pageBytes += m.valueBytes;
        }
        return true;
      },
      limit + 1,
    );
  } else {
    await forEachChunk(ctx, candidates, revision, call, (chunk) => {
      for (const { key, kv } of chunk) {
        const m = matchOf(key, kv);
        if (!m) continue;
        if (best.length > limit && compare(m.pos, (best.at(-1) as Match).pos) >= 0) continue;
        let lo = 0;
        let hi = best.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (compare((best[mid] as Match).pos, m.pos) < 0) lo = mid + 1;
          else hi = mid;
        }
        best.splice(lo, 0, m);
        if (best.length > limit + 1) best.pop();
      }
      return true;
    });
  }

  const { page, nextCursor } = takePage(plan, best, (m) => m.valueBytes);
  const items: Entry[] = [];
  const reread = page.filter((m) => m.kv === undefined);
  const kvOf = new Map<Match, IKeyValue | undefined>(page.map((m) => [m, m.kv]));
  await forEachChunk(ctx, reread, revision, call, (chunk) => {
    for (const { key: m, kv } of chunk) kvOf.set(m, kv);
    return true;
  });
  for (const m of page) {
    const kv = kvOf.get(m);
    if (!kv) throw new UnavailableError('a listed key vanished at its revision; retry', { backend: 'etcd' });
    items.push(entryView(namespace, m.pos.key, kv, decodeKv(ctx, kv)));
  }
  return { type: 'list', items, nextCursor };
}

export async function deleteNamespace(
  ctx: EtcdContext,
  op: Extract<Operation, { type: 'delete_namespace' }>,
  call: OpCall,
): Promise<OpResult> {
  const namespace = checkNamespace(ctx.limits, op.namespace);
  if (op.confirm !== true) throw new InvalidArgumentError('deleteNamespace requires confirm: true');
  const pattern = checkOptionalString('pattern', op.pattern) ?? '*';
  const glob = compileGlob(pattern);
  const after = op.after === undefined ? undefined : checkKey(ctx.limits, op.after);
  const maxKeys =
    op.maxKeys === undefined ? undefined : checkIntInRange('maxKeys', op.maxKeys, 1, ctx.limits.maxKeysPerNamespace);
  const { keys } = await indexNamespace(ctx, namespace, call);
  // coord's rule: with maxKeys, the smallest matching keys after `after` (key order), and where to resume.
  let matched = keys.filter((k) => (after === undefined || k.key > after) && globMatch(glob, k.key));
  matched.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let resumeAfter: string | undefined;
  if (maxKeys !== undefined && matched.length > maxKeys) {
    matched = matched.slice(0, maxKeys);
    resumeAfter = matched.at(-1)?.key;
  }
  let deleted = 0;
  for (let i = 0; i < matched.length; i += DELETE_BATCH) {
    deleted += await deleteBatch(
      ctx,
      matched.slice(i, i + DELETE_BATCH).map((k) => k.raw),
      call,
    );
  }
  return {
    type: 'namespace_deleted',
    deleted_count: deleted,
    namespace,
    pattern_used: pattern,
    ...(resumeAfter === undefined ? {} : { resume_after: resumeAfter }),
  };
}

/**
 * Deletes one batch of keys in one transaction (each compared at the
 * revision it was read at, just before), exactly once; on a lost compare,
 * re-reads the batch and tries again. Returns how many of them were live.
 */
async function deleteBatch(ctx: EtcdContext, batch: Buffer[], call: OpCall): Promise<number> {
  const request = await newRequest(ctx, call);
  const read = await readChunk(ctx, batch, undefined, call);
  let current: { key: Buffer; kv: IKeyValue | undefined }[] = batch.map((key, i) => ({ key, kv: read[i] }));
  for (let round = 0; round < 32; round++) {
    const present = current.filter((c) => c.kv !== undefined) as { key: Buffer; kv: IKeyValue }[];
    if (present.length === 0) return 0;
    const now = ctx.clock.nowMs();
    const live = present.filter((c) => decodeKv(ctx, c.kv).expiresAt > now).length;
    const out = await ctx.calls.txn(
      {
        compares: present.map((c) => unchanged(c.key, c.kv)),
        success: present.map((c) => ({ request_delete_range: { key: c.key } })),
        failure: current.map((c) => ({ request_range: { key: c.key } })),
        request: { id: request.id, leaseId: request.leaseId, result: { live } },
      },
      call,
    );
    if (out.replayed) {
      const r = out.replayed.result as { live?: unknown };
      return typeof r.live === 'number' ? r.live : 0;
    }
    if (out.succeeded) return live;
    current = current.map((c, i) => ({ key: c.key, kv: out.responses[i]?.response_range?.kvs?.[0] }));
  }
  throw new UnavailableError('deleteNamespace lost 32 rounds in a row to concurrent writers; retry', {
    backend: 'etcd',
  });
}

/**
 * Live keys and value bytes per namespace (reads at most USAGE_SCAN_KEYS
 * keys). Liveness and size are in the records, so every record is read, a
 * chunk at a time.
 */
export async function namespaceUsage(ctx: EtcdContext, call: CallBound): Promise<StrongNamespaceUsage[]> {
  const { kvs, revision } = await indexRange(ctx, ctx.keys.entriesRoot(), call, USAGE_SCAN_KEYS);
  const named: { raw: Buffer; namespace: string }[] = [];
  for (const kv of kvs) {
    const name = ctx.keys.parseEntry(kv.key);
    if (name) named.push({ raw: kv.key, namespace: name.namespace });
  }
  const now = ctx.clock.nowMs();
  const byName = new Map<string, StrongNamespaceUsage>();
  await forEachChunk(ctx, named, revision, call, (chunk) => {
    for (const { key, kv } of chunk) {
      if (!kv) continue;
      let record: EntryRecord;
      try {
        record = decodeKv(ctx, kv);
      } catch {
        continue; // usage is a report: a foreign key under the prefix is not counted
      }
      if (record.expiresAt <= now) continue;
      let u = byName.get(key.namespace);
      if (!u) byName.set(key.namespace, (u = { name: key.namespace, keys: 0, bytes: 0 }));
      u.keys++;
      u.bytes += record.valueBytes;
    }
    return true;
  });
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
