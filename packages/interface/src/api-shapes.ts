/**
 * The shapes of the namespace API that more than one peer hands out: the
 * node (`@parley/node`'s api.ts) and a browser tab (`@parley/browser`)
 * answer with the same entries, pages and changes, so they are written here
 * once, below both.
 */
import type { JsonValue } from './json.js';
import type { PeerId } from './transport.js';

/** Listing grammar shared by strong and eventual namespaces (coord's parser). */
export interface ListQuery {
  /** Case-insensitive substring match on the key. */
  q?: string;
  /** Only keys that start with this (case-sensitive, as a watch's `prefix`); combines with `q`. */
  prefix?: string;
  /** Filter expression (coord's grammar, e.g. `value.status == "open"`). */
  filter?: string;
  sortBy?: 'key' | 'created_at' | 'updated_at';
  sortOrder?: 'asc' | 'desc';
  /** Page size; default 100, at most 1000. */
  limit?: number;
  /** From a previous page's `nextCursor`. */
  cursor?: string;
}

/** One page of a listing; pass `nextCursor` as the next query's `cursor`. */
export interface ListPage<E> {
  items: E[];
  /** Null on the last page. */
  nextCursor: string | null;
}

/** An eventual namespace's entry as a replica holds it (times in ms since the epoch; versions opaque). */
export interface EventualEntry {
  namespace: string;
  key: string;
  /**
   * The value as this replica holds it, deeply frozen (read-only: assigning into
   * it throws in strict code). Copy it (`structuredClone`) to change it locally.
   */
  value: JsonValue;
  version: string;
  ttlSeconds: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

/** One change a watch of an eventual namespace reports. */
export interface EventualChange {
  namespace: string;
  key: string;
  /** 'set' (register or counter value changed), 'delete', or 'expire'. */
  type: 'set' | 'delete' | 'expire';
  /** The entry after the change; absent for delete and expire. */
  entry?: EventualEntry;
  /**
   * 'local' for this replica's own writes (a node's, or a browser tab's), else the
   * peer id the change came from (for a tab: the node it came through).
   */
  origin: 'local' | PeerId;
}

/** What a watch reports: every key, or those that start with `prefix`. */
export interface WatchOptions {
  prefix?: string;
}

/** Whether a write made the entry (no live entry had the key) or replaced one. */
export type WriteOperation = 'created' | 'updated';

/** What `eventual(ns).set` answers: the entry as written, with `operation` (as strong `set` and the HTTP API). */
export type EventualSetResult = EventualEntry & { operation: WriteOperation };
