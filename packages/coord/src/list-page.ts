/**
 * The list grammar, written once for every store that lists entries (the
 * state machine, the etcd backend, eventual namespaces): `q` (case-insensitive
 * substring of the key), `prefix`, `filter` (filter.ts), `sortBy` key |
 * created_at | updated_at, `sortOrder`, `limit` (default and largest from the
 * limits) and an opaque `cursor` (cursor.ts) that resumes after the last item.
 * A page ends at `limit` items, or before its values would pass
 * `maxListPageBytes` (after at least one item); `nextCursor` is set when
 * more matches remain.
 *
 * `planList` checks a request and says what matches and in which order;
 * `takePage` cuts the sorted matches into a page; `listPage` does both over
 * entries held in memory.
 */
import { InvalidArgumentError } from '@parley/interface';
import { type CursorPosition, decodeCursor, encodeCursor } from './cursor.js';
import { evalFilter, type FilterNode, parseFilter } from './filter.js';
import type { JsonValue } from './json.js';
import type { CoordLimits, SortBy, SortOrder } from './types.js';
import { checkIntInRange, checkOptionalString } from './validate.js';

/** The fields of a list request (unchecked: they may come from the wire). */
export interface ListRequest {
  q?: unknown;
  prefix?: unknown;
  filter?: unknown;
  sortBy?: unknown;
  sortOrder?: unknown;
  limit?: unknown;
  cursor?: unknown;
}

/** The bounds a list obeys. */
export type ListBounds = Pick<CoordLimits, 'defaultListLimit' | 'maxListLimit' | 'maxListPageBytes' | 'maxKeyLength'>;

/** A checked list request. */
export interface ListPlan {
  readonly sortBy: SortBy;
  readonly sortOrder: SortOrder;
  readonly limit: number;
  readonly maxPageBytes: number;
  /** The position just before the page (from the cursor), if any. */
  readonly after: CursorPosition | undefined;
  /** Whether a key passes `prefix` and `q` (a check on keys alone). */
  keyMatches(key: string): boolean;
  /** Where an entry sorts. */
  position(key: string, createdAt: number, updatedAt: number): CursorPosition;
  /** Whether a position comes after the cursor (always, without one). */
  afterCursor(pos: CursorPosition): boolean;
  /** Whether a value passes `filter` (always, without one). */
  valueMatches(value: JsonValue): boolean;
  /** List order: by sort value, then key, reversed for 'desc'. */
  compare(a: CursorPosition, b: CursorPosition): number;
}

/** Checks a list request; every failure is an InvalidArgumentError. */
export function planList(bounds: ListBounds, req: ListRequest): ListPlan {
  const q = checkOptionalString('q', req.q);
  if (q !== undefined && q.length > bounds.maxKeyLength) {
    throw new InvalidArgumentError(`q must be at most ${bounds.maxKeyLength} characters`);
  }
  const prefix = checkOptionalString('prefix', req.prefix);
  if (prefix !== undefined && prefix.length > bounds.maxKeyLength) {
    throw new InvalidArgumentError(`prefix must be at most ${bounds.maxKeyLength} characters`);
  }
  const filterText = checkOptionalString('filter', req.filter);
  const sortBy = (req.sortBy ?? 'key') as SortBy;
  if (sortBy !== 'key' && sortBy !== 'created_at' && sortBy !== 'updated_at') {
    throw new InvalidArgumentError("sortBy must be 'key', 'created_at' or 'updated_at'");
  }
  const sortOrder = (req.sortOrder ?? 'asc') as SortOrder;
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw new InvalidArgumentError("sortOrder must be 'asc' or 'desc'");
  const limit =
    req.limit === undefined ? bounds.defaultListLimit : checkIntInRange('limit', req.limit, 1, bounds.maxListLimit);
  const cursorText = checkOptionalString('cursor', req.cursor);
  const filter: FilterNode | undefined = filterText === undefined ? undefined : parseFilter(filterText);
  const after = cursorText === undefined ? undefined : decodeCursor(cursorText, sortBy, sortOrder);
  const needle = q?.toLowerCase();
  const sign = sortOrder === 'asc' ? 1 : -1;
  const compare = (a: CursorPosition, b: CursorPosition): number => {
    let c = 0;
    if (a.sortValue < b.sortValue) c = -1;
    else if (a.sortValue > b.sortValue) c = 1;
    else if (a.key < b.key) c = -1;
    else if (a.key > b.key) c = 1;
    return c * sign;
  };
  return {
    sortBy,
    sortOrder,
    limit,
    maxPageBytes: bounds.maxListPageBytes,
    after,
    keyMatches: (key) =>
      (prefix === undefined || key.startsWith(prefix)) && (needle === undefined || key.toLowerCase().includes(needle)),
    position: (key, createdAt, updatedAt) => ({
      sortValue: sortBy === 'key' ? key : sortBy === 'created_at' ? createdAt : updatedAt,
      key,
    }),
    afterCursor: (pos) => after === undefined || compare(pos, after) > 0,
    valueMatches: (value) => filter === undefined || evalFilter(filter, value),
    compare,
  };
}

/**
 * The page of `sorted` (matches in list order; at least the page and one
 * more when there is a next page): at most `limit` items, and no more value
 * bytes than `maxPageBytes` unless a single item holds more.
 */
export function takePage<M extends { pos: CursorPosition }>(
  plan: ListPlan,
  sorted: readonly M[],
  valueBytes: (m: M) => number,
): { page: M[]; nextCursor: string | null } {
  const page: M[] = [];
  let pageBytes = 0;
  for (const m of sorted) {
    if (page.length >= plan.limit) break;
    const bytes = valueBytes(m);
    if (page.length > 0 && pageBytes + bytes > plan.maxPageBytes) break;
    page.push(m);
    pageBytes += bytes;
  }
  const last = page.at(-1);
  const nextCursor =
    sorted.length > page.length && last
      ? encodeCursor(plan.sortBy, plan.sortOrder, last.pos.sortValue, last.pos.key)
      : null;
  return { page, nextCursor };
}

/** What `listPage` reads of an entry. */
export interface ListedFields {
  createdAt: number;
  updatedAt: number;
  value: JsonValue;
}

/** One page of `entries` (live ones only) under `plan`, each item built by `view`. */
export function listPage<E extends ListedFields, I>(
  plan: ListPlan,
  entries: Iterable<[string, E]>,
  valueBytes: (e: E) => number,
  view: (key: string, e: E) => I,
): { items: I[]; nextCursor: string | null } {
  const matches: { pos: CursorPosition; entry: E }[] = [];
  for (const [key, e] of entries) {
    if (!plan.keyMatches(key)) continue;
    const pos = plan.position(key, e.createdAt, e.updatedAt);
    if (!plan.afterCursor(pos)) continue;
    if (!plan.valueMatches(e.value)) continue;
    matches.push({ pos, entry: e });
  }
  matches.sort((a, b) => plan.compare(a.pos, b.pos));
  const { page, nextCursor } = takePage(plan, matches, (m) => valueBytes(m.entry));
  return { items: page.map((m) => view(m.pos.key, m.entry)), nextCursor };
}
