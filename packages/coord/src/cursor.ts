/** List cursors: an opaque base64url token naming the sort and the last position returned. */
import { InvalidArgumentError } from '@parley/interface';
import { base64UrlDecode, base64UrlEncode, canonicalJson, utf8Decode, utf8Encode } from './json.js';
import type { SortBy, SortOrder } from './types.js';

/** Where a list item sorts: its sort value (the key, or a time), then its key. */
export interface CursorPosition {
  sortValue: number | string;
  key: string;
}

export function encodeCursor(sortBy: SortBy, sortOrder: SortOrder, sortValue: number | string, key: string): string {
  return base64UrlEncode(utf8Encode(canonicalJson([sortBy, sortOrder, sortValue, key])));
}

export function decodeCursor(text: string, sortBy: SortBy, sortOrder: SortOrder): CursorPosition {
  const bad = () => new InvalidArgumentError('cursor is malformed or belongs to another sort', { cursor: text });
  if (text.length > 8192) throw bad();
  const bytes = base64UrlDecode(text);
  if (!bytes) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8Decode(bytes));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw bad();
  const [by, order, sortValue, key] = parsed as unknown[];
  if (by !== sortBy || order !== sortOrder || typeof key !== 'string') throw bad();
  // A number past float64 (1e400) parses to Infinity, which no cursor this module issues can hold.
  if (sortBy === 'key' ? typeof sortValue !== 'string' : !Number.isFinite(sortValue)) throw bad();
  return { sortValue: sortValue as number | string, key };
}
