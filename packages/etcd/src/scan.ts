/**
 * How namespace-wide operations read etcd without pulling whole namespaces
 * with their values: a keys-only index of a range at one revision (keys and
 * revisions, no values), then the records of chosen keys in bounded
 * multi-gets (read-only transactions of at most READ_CHUNK ranges) pinned to
 * that revision. A list page, a usage report or a namespace delete reads the
 * records it needs, a chunk at a time, and never holds more than a chunk of
 * them at once.
 *
 * Order: etcd orders keys by their escaped UTF-8 bytes (keys.ts), which is
 * not coord's order (JavaScript string order: `/` is escaped as `%2F`, and
 * UTF-8 orders characters past U+FFFF after U+E000..U+FFFF). The index is
 * decoded and sorted in coord's order by the caller; values are fetched by key.
 */
import type { IKeyValue } from 'etcd3';
import type { EtcdContext } from './context.js';
import { prefixEnd } from './keys.js';
import type { CallBound } from './txn.js';

/** Keys per keys-only range page. */
const INDEX_PAGE_KEYS = 1000;
/** Records per streamed multi-get; each may be up to the value limit. */
export const READ_CHUNK = 32;
/** Most ranges in one multi-get (etcd's --max-txn-ops defaults to 128). */
export const MAX_READS_PER_TXN = 100;

/** One entry key of an index: its name and its etcd key. */
export interface IndexedKey {
  key: string;
  raw: Buffer;
}

/**
 * The keys (no values) under `start` to its prefix end at one revision (the
 * first page's, a quorum read), at most `maxKeys` (then `truncated`).
 */
export async function indexRange(
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
      {
        key: from,
        range_end: end,
        limit: Math.min(INDEX_PAGE_KEYS, maxKeys - kvs.length + 1),
        keys_only: true,
        ...(revision > 0 ? { revision } : {}),
      },
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

/**
 * The key-values of `raws` (at most MAX_READS_PER_TXN), in order (undefined
 * where a key is absent), in one read-only transaction: at `revision` when
 * given (then every key of an index taken at that revision is present), else
 * the current ones.
 */
export async function readChunk(
  ctx: EtcdContext,
  raws: readonly Buffer[],
  revision: number | undefined,
  call: CallBound,
): Promise<(IKeyValue | undefined)[]> {
  if (raws.length > MAX_READS_PER_TXN) throw new RangeError(`at most ${MAX_READS_PER_TXN} keys per read`);
  if (raws.length === 0) return [];
  const out = await ctx.calls.txn(
    {
      compares: [],
      success: raws.map((key) => ({ request_range: { key, ...(revision === undefined ? {} : { revision }) } })),
    },
    call,
  );
  return raws.map((_, i) => out.responses[i]?.response_range?.kvs?.[0]);
}

/** Calls `visit` with the key-values of `keys` (at `revision`), one READ_CHUNK at a time; stops when it returns false. */
export async function forEachChunk<K extends { raw: Buffer }>(
  ctx: EtcdContext,
  keys: readonly K[],
  revision: number | undefined,
  call: CallBound,
  visit: (chunk: { key: K; kv: IKeyValue | undefined }[]) => boolean | undefined,
  firstChunk = READ_CHUNK,
): Promise<void> {
  let size = Math.max(1, Math.min(READ_CHUNK, firstChunk));
  for (let i = 0; i < keys.length; ) {
    const slice = keys.slice(i, i + size);
    const kvs = await readChunk(
      ctx,
      slice.map((k) => k.raw),
      revision,
      call,
    );
    if (visit(slice.map((key, j) => ({ key, kv: kvs[j] }))) === false) return;
    i += slice.length;
    size = Math.min(READ_CHUNK, size * 2);
  }
}
