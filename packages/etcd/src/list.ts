/**
 * Namespace-wide operations on etcd: `list` (coord's q / filter / sortBy /
 * sortOrder / limit / cursor grammar applied to a range read of the
 * namespace at one revision), `delete_namespace` (confirm and a glob
 * pattern), the namespace key bound (`namespace_full`), and `usage()`.
 *
 * A namespace is read in pages pinned to the first page's revision, so a
 * list is a consistent snapshot (linearizable: the first page is a quorum
 * read). Entries past their deadline are skipped, as everywhere.
 */

import type { StrongNamespaceUsage } from '@parley/coord';
import { compileGlob, evalFilter, type FilterNode, globMatch, type Operation, type OpResult } from '@parley/coord';
import { type CursorPosition, decodeCursor, encodeCursor } from '@parley/coord/cursor';
import { parseFilter } from '@parley/coord/filter';
import type { SortBy, SortOrder } from '@parley/coord/types';
import { checkIntInRange, checkNamespace, checkOptionalString } from '@parley/coord/validate';
import { InvalidArgumentError, NamespaceFullError, UnavailableError } from '@parley/interface';
import type { ICompare, IKeyValue } from 'etcd3';
import type { EtcdContext, OpCall } from './context.js';
import { newRequest } from './context.js';
import { decodeKv, entryView, unchanged } from './entries.js';
import { prefixEnd } from './keys.js';
import type { EntryRecord } from './record.js';
import type { CallBound } from './txn.js';

/** Keys per range page (values may be up to the value limit each). */
const PAGE_KEYS = 64;
/** Keys deleted per transaction by delete_namespace (etcd's --max-txn-ops defaults to 128). */
export const DELETE_BATCH = 100;
/** How close to the key bound a create must be before it also compares the whole namespace. */
export const NEAR_FULL_MARGIN = 256;
/** Keys usage() reads at most (live and expired, over all namespaces). */
const USAGE_SCAN_KEYS = 20_000;

export interface ScannedEntry {
  key: string;
  kv: IKeyValue;
  record: EntryRecord;
}

/** Most raw keys (live or awaiting cleanup) one namespace scan reads before it gives up. */
function maxScanKeys(ctx: EtcdContext): number {
  return ctx.limits.maxKeysPerNamespace * 8 + 1024;
}

/**
 * Every entry key-value under `start` (to its prefix end) at one revision, in
 * etcd's key order, at most `maxKeys` (then `truncated`).
 */
export async function scanRange(
  ctx: EtcdContext,
  start: Buffer,
  call: CallBound,
  maxKeys: number,
): Promise<{ kvs: IKeyValue[]; revision: number; truncated: boolean }> {
  const end = prefixEnd(start);
  const kvs: IKeyValue[] = [];
  let from = start;
  let revision = 0;
  for (;;) {
    const res = await ctx.calls.range(
      { key: from, range_end: end, limit: PAGE_KEYS, ...(revision > 0 ? { revision } : {}) },
      call,
    );
    if (revision === 0) revision = Number(res.header.revision);
    for (const kv of res.kvs) {
      if (kvs.length >= maxKeys) return { kvs, revision, truncated: true };
      kvs.push(kv);
    }
    const last = res.kvs.at(-1);
    if (!res.more || !last) return { kvs, revision, truncated: false };
    from = Buffer.concat([last.key, Buffer.from([0])]);
  }
}

/** Every entry of a namespace (expired ones too) at one revision. */
export async function scanNamespace(
  ctx: EtcdContext,
  namespace: string,
  call: CallBound,
): Promise<{ entries: ScannedEntry[]; revision: number }> {
  const { kvs, revision, truncated } = await scanRange(
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
  const entries: ScannedEntry[] = [];
  for (const kv of kvs) {
    const name = ctx.keys.parseEntry(kv.key);
    if (!name || name.namespace !== namespace) continue;
    entries.push({ key: name.key, kv, record: decodeKv(ctx, kv) });
  }
  return { entries, revision };
}

/**
 * The namespace bound for a write that creates a key: throws
 * NamespaceFullError when the namespace already holds maxKeysPerNamespace
 * live keys. Far from the bound (by etcd's raw key count) nothing more is
 * needed; near it, the live keys are counted and the returned compare makes
 * the write's transaction fail if any key of the namespace was created or
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
  const { entries, revision } = await scanNamespace(ctx, namespace, call);
  const now = ctx.clock.nowMs();
  const live = entries.filter((e) => e.record.expiresAt > now).length;
  if (live >= max) throw new NamespaceFullError(namespace, max);
  return [{ key: start, range_end: prefixEnd(start), target: 'Mod', result: 'Less', mod_revision: revision + 1 }];
}

export async function listEntries(
  ctx: EtcdContext,
  op: Extract<Operation, { type: 'list' }>,
  call: OpCall,
): Promise<OpResult> {
  const limits = ctx.limits;
  const namespace = checkNamespace(limits, op.namespace);
  const q = checkOptionalString('q', op.q);
  if (q !== undefined && q.length > limits.maxKeyLength) {
    throw new InvalidArgumentError(`q must be at most ${limits.maxKeyLength} characters`);
  }
  const filterText = checkOptionalString('filter', op.filter);
  const sortBy: SortBy = op.sortBy ?? 'key';
  if (sortBy !== 'key' && sortBy !== 'created_at' && sortBy !== 'updated_at') {
    throw new InvalidArgumentError("sortBy must be 'key', 'created_at' or 'updated_at'");
  }
  const sortOrder: SortOrder = op.sortOrder ?? 'asc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw new InvalidArgumentError("sortOrder must be 'asc' or 'desc'");
  const limit =
    op.limit === undefined ? limits.defaultListLimit : checkIntInRange('limit', op.limit, 1, limits.maxListLimit);
  const cursorText = checkOptionalString('cursor', op.cursor);
  const filter: FilterNode | undefined = filterText === undefined ? undefined : parseFilter(filterText);
  const after = cursorText === undefined ? undefined : decodeCursor(cursorText, sortBy, sortOrder);
  const needle = q?.toLowerCase();

  const sortValue = (e: ScannedEntry): number | string =>
    sortBy === 'key' ? e.key : sortBy === 'created_at' ? e.record.createdAt : e.record.updatedAt;
  const sign = sortOrder === 'asc' ? 1 : -1;
  const compare = (a: CursorPosition, b: CursorPosition): number => {
    let c = 0;
    if (a.sortValue < b.sortValue) c = -1;
    else if (a.sortValue > b.sortValue) c = 1;
    else if (a.key < b.key) c = -1;
    else if (a.key > b.key) c = 1;
    return c * sign;
  };

  const { entries } = await scanNamespace(ctx, namespace, call);
  const now = ctx.clock.nowMs();
  const matches: { pos: CursorPosition; entry: ScannedEntry }[] = [];
  for (const e of entries) {
    if (e.record.expiresAt <= now) continue;
    if (needle !== undefined && !e.key.toLowerCase().includes(needle)) continue;
    const pos = { sortValue: sortValue(e), key: e.key };
    if (after && compare(pos, after) <= 0) continue;
    if (filter && !evalFilter(filter, e.record.value)) continue;
    matches.push({ pos, entry: e });
  }
  matches.sort((a, b) => compare(a.pos, b.pos));
  const page: typeof matches = [];
  let pageBytes = 0;
  for (const m of matches) {
    if (page.length >= limit) break;
    if (page.length > 0 && pageBytes + m.entry.record.valueBytes > limits.maxListPageBytes) break;
    page.push(m);
    pageBytes += m.entry.record.valueBytes;
  }
  const last = page.at(-1);
  const nextCursor =
    matches.length > page.length && last ? encodeCursor(sortBy, sortOrder, last.pos.sortValue, last.pos.key) : null;
  return {
    type: 'list',
    items: page.map((m) => entryView(namespace, m.entry.key, m.entry.kv, m.entry.record)),
    nextCursor,
  };
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
  const { entries } = await scanNamespace(ctx, namespace, call);
  const matched = entries.filter((e) => globMatch(glob, e.key));
  let deleted = 0;
  for (let i = 0; i < matched.length; i += DELETE_BATCH) {
    deleted += await deleteBatch(ctx, matched.slice(i, i + DELETE_BATCH), call);
  }
  return { type: 'namespace_deleted', deleted_count: deleted, namespace, pattern_used: pattern };
}

/**
 * Deletes one batch of keys in one transaction (each compared at the
 * revision it was read at), exactly once; on a lost compare, re-reads the
 * batch and tries again. Returns how many of them were live.
 */
async function deleteBatch(ctx: EtcdContext, batch: ScannedEntry[], call: OpCall): Promise<number> {
  const request = await newRequest(ctx, call);
  let current: { key: Buffer; kv: IKeyValue | undefined }[] = batch.map((e) => ({ key: e.kv.key, kv: e.kv }));
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

/** Live keys and value bytes per namespace (reads at most USAGE_SCAN_KEYS keys). */
export async function namespaceUsage(ctx: EtcdContext, call: CallBound): Promise<StrongNamespaceUsage[]> {
  const { kvs } = await scanRange(ctx, ctx.keys.entriesRoot(), call, USAGE_SCAN_KEYS);
  const now = ctx.clock.nowMs();
  const byName = new Map<string, StrongNamespaceUsage>();
  for (const kv of kvs) {
    const name = ctx.keys.parseEntry(kv.key);
    if (!name) continue;
    let record: EntryRecord;
    try {
      record = decodeKv(ctx, kv);
    } catch {
      continue; // usage is a report: a foreign key under the prefix is not counted
    }
    if (record.expiresAt <= now) continue;
    let u = byName.get(name.namespace);
    if (!u) byName.set(name.namespace, (u = { name: name.namespace, keys: 0, bytes: 0 }));
    u.keys++;
    u.bytes += record.valueBytes;
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
