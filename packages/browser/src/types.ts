/** The shapes a browser node hands out: those of a node's eventual API (`@parley/node`'s api.ts). */
import type { JsonValue } from '@parley/interface';

export type { JsonValue };

export interface EventualEntry {
  namespace: string;
  key: string;
  /** The value as this replica holds it, deeply frozen (copy it to change it). */
  value: JsonValue;
  version: string;
  ttlSeconds: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

export type WriteOperation = 'created' | 'updated';
export type EventualSetResult = EventualEntry & { operation: WriteOperation };

export interface EventualWriteOptions {
  /** Seconds, 1 .. 30 days; default 3600. */
  ttl?: number;
}

export interface EventualChange {
  namespace: string;
  key: string;
  type: 'set' | 'delete' | 'expire';
  entry?: EventualEntry;
  /** 'local' for this tab's writes, else the id of the node the change came through. */
  origin: string;
}

export interface WatchOptions {
  prefix?: string;
}

export interface ListQuery {
  q?: string;
  prefix?: string;
  filter?: string;
  sortBy?: 'key' | 'created_at' | 'updated_at';
  sortOrder?: 'asc' | 'desc';
  limit?: number;
  cursor?: string;
}

export interface ListPage<E> {
  items: E[];
  nextCursor: string | null;
}

export type Unsubscribe = () => void;

/**
 * Where a namespace's sync with the node stands: `offline` (no connection; writes are
 * kept and sent on reconnect), `connecting`, `syncing` (connected, exchanging what each
 * side lacks), `synced` (the node holds every write of this tab, and this tab every write
 * the node had at the last exchange), `refused` (the node refused this client: a bad
 * token or namespace; no retry).
 */
export type SyncState = 'offline' | 'connecting' | 'syncing' | 'synced' | 'refused';
