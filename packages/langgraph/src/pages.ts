/** Every entry of a strong namespace's listing, page by page. */
import type { ListQuery, StrongEntry, StrongNamespace } from '@parley/node';

export async function* listAll(
  ns: StrongNamespace,
  query: Omit<ListQuery, 'cursor' | 'limit'>,
  pageSize = 100,
): AsyncGenerator<StrongEntry> {
  let cursor: string | undefined;
  do {
    const page = await ns.list({ ...query, limit: pageSize, ...(cursor !== undefined ? { cursor } : {}) });
    for (const e of page.items) yield e;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
