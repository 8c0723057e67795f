/** Query-string helpers shared by the namespace routes (values arrive as text, already schema-checked). */
import type { ListQuery, StrongReadOptions } from '@parley/node';
import { HttpError } from '../errors.js';

export interface ListQueryText {
  q?: string;
  filter?: string;
  sort_by?: 'key' | 'created_at' | 'updated_at';
  sort_order?: 'asc' | 'desc';
  limit?: string;
  cursor?: string;
  watch?: 'true' | 'false';
  prefix?: string;
  from_revision?: string;
}

/** A strong read's freshness, as the query string spells it (docs/http-api.md). */
export interface StrongReadText {
  consistency?: 'linearizable' | 'serializable' | 'bounded';
  max_staleness_ms?: string;
  max_lag_entries?: string;
}

export const MAX_LIST_LIMIT = 1000;

/** `consistency`, `max_staleness_ms`, `max_lag_entries` as the node's read options (the node checks the mix). */
export function strongReadOf(query: StrongReadText): StrongReadOptions {
  const out: StrongReadOptions = {};
  if (query.consistency !== undefined) out.consistency = query.consistency;
  if (query.max_staleness_ms !== undefined) out.maxStalenessMs = Number(query.max_staleness_ms);
  if (query.max_lag_entries !== undefined) out.maxLagEntries = Number(query.max_lag_entries);
  return out;
}

export function intInRange(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new HttpError('invalid_argument', `${name} must be an integer in ${min}..${max}`);
  }
  return n;
}

/** The listing grammar of seed 000 (q, filter, sort_by, sort_order, limit, cursor) and a key prefix. */
export function listQueryOf(query: ListQueryText): ListQuery {
  if (query.from_revision !== undefined) {
    throw new HttpError('invalid_argument', 'from_revision applies to watch=true only');
  }
  const out: ListQuery = {};
  if (query.q !== undefined) out.q = query.q;
  if (query.prefix !== undefined) out.prefix = query.prefix;
  if (query.filter !== undefined) out.filter = query.filter;
  if (query.sort_by !== undefined) out.sortBy = query.sort_by;
  if (query.sort_order !== undefined) out.sortOrder = query.sort_order;
  if (query.limit !== undefined) out.limit = intInRange('limit', query.limit, 1, MAX_LIST_LIMIT);
  if (query.cursor !== undefined) out.cursor = query.cursor;
  return out;
}

/** A watch takes only prefix and a resume point. */
export function checkWatchQuery(query: ListQueryText): void {
  for (const name of ['q', 'filter', 'sort_by', 'sort_order', 'limit', 'cursor'] as const) {
    if (query[name] !== undefined) throw new HttpError('invalid_argument', `${name} does not apply to watch=true`);
  }
}
