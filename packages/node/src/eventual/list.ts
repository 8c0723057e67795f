/**
 * `list` over an eventual namespace, in the grammar strong listing speaks:
 * `q` (case-insensitive substring of the key), `filter` (coord's parser),
 * `sortBy` key | created_at | updated_at, `sortOrder`, `limit` (default 100,
 * at most 1000) and an opaque `cursor` that resumes after the last item.
 */
import { evalFilter, type FilterNode, parseFilter } from '@parley/coord';
import type { Entry, JsonValue } from '@parley/crdt';
import { InvalidArgumentError } from '@parley/interface';
import type { ListPage, ListQuery } from '../api.js';

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;

type SortBy = NonNullable<ListQuery['sortBy']>;
type SortOrder = NonNullable<ListQuery['sortOrder']>;

interface Position {
  sortValue: number | string;
  key: string;
}

function encodeCursor(sortBy: SortBy, sortOrder: SortOrder, pos: Position): string {
  return Buffer.from(JSON.stringify([sortBy, sortOrder, pos.sortValue, pos.key]), 'utf8').toString('base64url');
}

function decodeCursor(text: string, sortBy: SortBy, sortOrder: SortOrder): Position {
  const bad = () => new InvalidArgumentError('cursor is malformed or belongs to another sort', { cursor: text });
  if (typeof text !== 'string' || text.length > 8192 || !/^[A-Za-z0-9_-]*$/.test(text)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw bad();
  const [by, order, sortValue, key] = parsed as unknown[];
  if (by !== sortBy || order !== sortOrder || typeof key !== 'string') throw bad();
  if (sortBy === 'key' ? typeof sortValue !== 'string' : typeof sortValue !== 'number') throw bad();
  return { sortValue: sortValue as number | string, key };
}

/** One page of `entries` (live entries sorted by key) under `query`; `view` builds an item. */
export function listEntries<E>(
  entries: Iterable<[string, Entry]>,
  query: ListQuery,
  view: (key: string, e: Entry) => E,
): ListPage<E> {
  if (query === null || typeof query !== 'object') throw new InvalidArgumentError('list query must be an object');
  const sortBy: SortBy = query.sortBy ?? 'key';
  if (sortBy !== 'key' && sortBy !== 'created_at' && sortBy !== 'updated_at') {
    throw new InvalidArgumentError("sortBy must be 'key', 'created_at' or 'updated_at'");
  }
  const sortOrder: SortOrder = query.sortOrder ?? 'asc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw new InvalidArgumentError("sortOrder must be 'asc' or 'desc'");
  const limit = query.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError(`limit must be an integer in 1..${MAX_LIST_LIMIT}`);
  }
  if (query.q !== undefined && (typeof query.q !== 'string' || query.q.length > 1024)) {
    throw new InvalidArgumentError('q must be a string of at most 1024 characters');
  }
  if (query.prefix !== undefined && (typeof query.prefix !== 'string' || query.prefix.length > 1024)) {
    throw new InvalidArgumentError('prefix must be a string of at most 1024 characters');
  }
  const prefix = query.prefix;
  if (query.filter !== undefined && typeof query.filter !== 'string') {
    throw new InvalidArgumentError('filter must be a string');
  }
  const filter: FilterNode | undefined = query.filter === undefined ? undefined : parseFilter(query.filter);
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, sortBy, sortOrder);
  const needle = query.q?.toLowerCase();
  const sign = sortOrder === 'asc' ? 1 : -1;
  const compare = (a: Position, b: Position): number => {
    let c = 0;
    if (a.sortValue < b.sortValue) c = -1;
    else if (a.sortValue > b.sortValue) c = 1;
    else if (a.key < b.key) c = -1;
    else if (a.key > b.key) c = 1;
    return c * sign;
  };
  const matches: Array<{ pos: Position; key: string; entry: Entry }> = [];
  for (const [key, e] of entries) {
    if (prefix !== undefined && !key.startsWith(prefix)) continue;
    if (needle !== undefined && !key.toLowerCase().includes(needle)) continue;
    const pos = { sortValue: sortBy === 'key' ? key : sortBy === 'created_at' ? e.createdAt : e.updatedAt, key };
    if (after && compare(pos, after) <= 0) continue;
    if (filter && !evalFilter(filter, e.value as JsonValue)) continue;
    matches.push({ pos, key, entry: e });
  }
  matches.sort((a, b) => compare(a.pos, b.pos));
  const page = matches.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map((m) => view(m.key, m.entry)),
    nextCursor: matches.length > page.length && last ? encodeCursor(sortBy, sortOrder, last.pos) : null,
  };
}
