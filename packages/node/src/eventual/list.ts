/**
 * `list` over an eventual namespace: coord's list grammar and page bounds
 * (`planList` / `listPage` of @parley/coord, with coord's default limits:
 * `limit` default 100, at most 1000; a page stops before its values pass
 * 8 MiB), over the live entries of the replica.
 */
import { DEFAULT_LIMITS, listPage, planList } from '@parley/coord';
import type { Entry } from '@parley/crdt';
import { InvalidArgumentError } from '@parley/interface';
import type { ListPage, ListQuery } from '../api.js';

/** Size of a value as the page bound counts it (UTF-8 bytes of its JSON). */
function valueBytes(e: Entry): number {
  return Buffer.byteLength(JSON.stringify(e.value), 'utf8');
}

/** One page of `entries` (live entries) under `query`; `view` builds an item. */
export function listEntries<E>(
  entries: Iterable<[string, Entry]>,
  query: ListQuery,
  view: (key: string, e: Entry) => E,
): ListPage<E> {
  if (query === null || typeof query !== 'object') throw new InvalidArgumentError('list query must be an object');
  return listPage(planList(DEFAULT_LIMITS, query), entries, valueBytes, view);
}
